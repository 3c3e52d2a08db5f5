"""A local Dee Wan next to the plugin: two real processes on loopback, the plugin installed.

Used by `scripts/dev` (a person clicking around) and by the browser tests.
"""

from scripts.devstack.stack import DevStack, DevStackError, PortInUse

__all__ = ["DevStack", "DevStackError", "PortInUse"]
