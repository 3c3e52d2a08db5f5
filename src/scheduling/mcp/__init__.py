"""The agents' way in: `POST /mcp` (`endpoint.py`), the Model Context Protocol over HTTP with
an agent key, and the tools it offers (`tools.py`).
"""
