"""A local Dee Wan next to the plugin: two real processes on loopback, the plugin installed.

Used by `scripts/dev` (a person clicking around) and by the browser tests.
Modules: `stack` (the two processes), `vars_file` (the plugin's `.dev.vars`),
`installation` (the last run's installation, or a new one), `errors`.
"""

from scripts.devstack.errors import DevStackError, PortInUse
from scripts.devstack.stack import DevStack

__all__ = ["DevStack", "DevStackError", "PortInUse"]
