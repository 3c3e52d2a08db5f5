"""Agent calls as the operator's metrics read them: `scheduling_agent_calls_total` by tool and
outcome (ok, refused, invalid), from running totals that only grow. Every registered tool and
outcome is a series from the start, at 0, so a rate is defined before the first call."""

from __future__ import annotations

from scheduling.mcp.tools import TOOLS
from scheduling.operator.metrics import Family, Sample
from scheduling.ports import Database
from scheduling.repository import agent_calls


async def agent_call_families(db: Database) -> list[Family]:
    totals = await agent_calls.totals(db)
    samples = tuple(
        Sample("_total", (("tool", tool), ("outcome", outcome)), totals.get((tool, outcome), 0))
        for tool in TOOLS
        for outcome in agent_calls.OUTCOMES
    )
    return [
        Family(
            "scheduling_agent_calls",
            "counter",
            "Tool calls agents made through POST /mcp, by tool and outcome.",
            samples,
        )
    ]
