"""The tools, one module each; adding a tool is its module and its line here."""

from __future__ import annotations

from scheduling.mcp.tool import Tool
from scheduling.mcp.tools import (
    agenda,
    cancel_schedule,
    get_release,
    get_schedule,
    list_schedules,
    propose_change,
    propose_schedule,
    withdraw_proposal,
)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        list_schedules.TOOL,
        get_schedule.TOOL,
        agenda.TOOL,
        propose_schedule.TOOL,
        withdraw_proposal.TOOL,
        cancel_schedule.TOOL,
        get_release.TOOL,
        propose_change.TOOL,
    )
}
