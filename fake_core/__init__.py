"""A fake Dee Wan core that enforces plugin protocol v1, for tests and local runs.

See fake_core/README.md. The public surface is re-exported here. Of the
plugin it uses only `scheduling.ports`, the transport types it plugs into.
"""

from __future__ import annotations

from fake_core.clock import AdjustableClock, http_date, parse_rfc3339, rfc3339
from fake_core.core import API, FakeCore
from fake_core.faults import SOAK_FAULTS, Fault, FaultContext, Faults, RandomFaults
from fake_core.install import InstallError, Launch, PluginCaller
from fake_core.record import Call, CallLog
from fake_core.state import (
    AppliedTransition,
    ContentItem,
    CoreState,
    Group,
    Installation,
    Person,
    Site,
)
from fake_core.transport import Handler, MockTransport, core_handler, httpx_caller

__all__ = [
    "API",
    "SOAK_FAULTS",
    "AdjustableClock",
    "AppliedTransition",
    "Call",
    "CallLog",
    "ContentItem",
    "CoreState",
    "FakeCore",
    "Fault",
    "FaultContext",
    "Faults",
    "Group",
    "Handler",
    "InstallError",
    "Installation",
    "Launch",
    "MockTransport",
    "Person",
    "PluginCaller",
    "RandomFaults",
    "Site",
    "core_handler",
    "http_date",
    "httpx_caller",
    "parse_rfc3339",
    "rfc3339",
]
