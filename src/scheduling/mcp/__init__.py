"""The agents' way in: `POST /mcp`, the Model Context Protocol over HTTP with an agent key.

`endpoint.py` checks who asks and speaks the protocol (the stateless 2026-07-28 revision and
2025-11-25 with its `initialize`); `tools.py` holds the tools and their one list. Agents
propose, people decide: nothing here publishes, unpublishes or pins.
"""
