"""`get_schedule`: one schedule, its attempts and its history in words."""

from __future__ import annotations

from pydantic import Field

from scheduling.domain.localtime import rfc3339
from scheduling.domain.refusals import Refusal
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.mcp.shapes import AttemptShape, ScheduleShape, attempt_shapes, schedule_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.repository import agent_queries, proposals, releases
from scheduling.repository.agent_keys import AgentKey
from scheduling.repository.proposals import Proposal
from scheduling.services import Services


class GetArguments(Arguments):
    schedule_id: str = Field(min_length=1, max_length=64, description="The schedule's id.")


class GetAnswer(Answer):
    schedule: ScheduleShape
    attempts: list[AttemptShape]
    history: list[str] = Field(description="What happened to it, oldest first, in words.")


def history(schedule: Schedule, proposal: Proposal | None) -> list[str]:
    lines = []
    if proposal is not None:
        lines.append(
            f"{rfc3339(proposal.created_at)}: proposed by the agent “{proposal.key_name}”"
            f" (a key of {proposal.person_name})"
        )
        lines.append(f"{rfc3339(schedule.created_at)}: confirmed by {proposal.decided_by_name}")
    elif schedule.replaces is None:
        lines.append(f"{rfc3339(schedule.created_at)}: scheduled by {schedule.requested_by_name}")
    if schedule.replaces is not None:  # moved, sent now, resumed, re-pinned, tried again
        made = (schedule.replaced_as or "made again").replace("_", " ")
        lines.append(
            f"{rfc3339(schedule.created_at)}: {made} by {schedule.requested_by_name},"
            f" replacing {schedule.replaces}"
        )
    lines.extend(
        f"{rfc3339(a.started_at)}: try {a.number}" + (f", {a.code}" if a.code else ", no answer")
        for a in schedule.attempts
    )
    if schedule.cancelled_at is not None:
        lines.append(f"{rfc3339(schedule.cancelled_at)}: cancelled by {schedule.cancelled_by_name}")
    return lines


async def reachable(services: Services, key: AgentKey, schedule_id: str) -> Schedule:
    """The schedule, when it is in the key's installation and reach; refused alike otherwise."""
    found = (
        await agent_queries.one(services.db, key.installation_id, schedule_id)
        if is_id(schedule_id)
        else None
    )
    if found is None or not key.reaches(found.content_id):
        raise Refusal.explained(404, "schedule_not_found")
    return found


async def get_schedule(services: Services, key: AgentKey, asked: GetArguments) -> GetAnswer:
    found = await reachable(services, key, asked.schedule_id)
    proposal = await proposals.of_schedule(services.db, key.installation_id, found.id)
    rels = await releases.of_schedules(services.db, [found.release_id or ""])
    return GetAnswer(
        schedule=schedule_shape(found, rels, services.clock.now_ms()),
        attempts=attempt_shapes(found),
        history=history(found, proposal),
    )


TOOL = Tool(
    name="get_schedule",
    title="Get a schedule",
    description=(
        "One schedule: its change, pinned version, time, status, each attempt to send it,"
        " and its history (who proposed, confirmed, cancelled). Asks Dee Wan nothing."
    ),
    arguments=GetArguments,
    answer=GetAnswer,
    call=get_schedule,
)
