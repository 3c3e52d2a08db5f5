"""Agent calls counted by tool and outcome, for the operator's metrics: running totals that
only grow. Tool names come from the registered tools, outcomes from a fixed set."""

from __future__ import annotations

from scheduling.ports import Database

OUTCOMES = ("ok", "refused", "invalid")


async def count(db: Database, tool: str, outcome: str) -> None:
    await (
        db.prepare(
            "INSERT INTO agent_calls (tool, outcome, calls) VALUES (?, ?, 1)"
            " ON CONFLICT (tool, outcome) DO UPDATE SET calls = calls + 1"
        )
        .bind(tool, outcome)
        .run()
    )


async def totals(db: Database) -> dict[tuple[str, str], int]:
    rows = await db.prepare("SELECT tool, outcome, calls FROM agent_calls").all()
    return {(str(r["tool"]), str(r["outcome"])): int(r["calls"]) for r in rows.results}
