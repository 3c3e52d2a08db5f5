"""`cancel_schedule`: cancel a waiting schedule made from this key's own confirmed proposal.
As on the page, a cancel never calls Dee Wan and never reverses a change made."""

from __future__ import annotations

from pydantic import Field

from scheduling.actions.cancel import cancel_allowed
from scheduling.domain.refusals import Refusal
from scheduling.mcp.shapes import ScheduleShape, schedule_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.mcp.tools.get_schedule import reachable
from scheduling.repository import proposals
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class CancelArguments(Arguments):
    schedule_id: str = Field(min_length=1, max_length=64)


class CancelAnswer(Answer):
    schedule: ScheduleShape


async def cancel_schedule(
    services: Services, key: AgentKey, asked: CancelArguments
) -> CancelAnswer:
    found = await reachable(services, key, asked.schedule_id)
    proposal = await proposals.of_schedule(services.db, key.installation_id, found.id)
    if proposal is None or proposal.key_id != key.id:
        raise Refusal(
            403,
            "cancel_not_allowed",
            "An agent cancels only schedules made from its own key's confirmed proposals."
            " A person cancels this one on the Scheduling page.",
        )
    await cancel_allowed(
        services,
        key.installation_id,
        found.id,
        person_id=key.person_id,
        person_name=f"{key.person_name}'s agent “{key.name}”",
        by=f" by agent key {key.id}",
    )
    return CancelAnswer(schedule=schedule_shape(await reachable(services, key, found.id)))


TOOL = Tool(
    name="cancel_schedule",
    title="Cancel a schedule",
    description=(
        "Cancel a waiting schedule that came from one of this key's confirmed proposals."
        " Never calls Dee Wan, never undoes a change already made."
    ),
    arguments=CancelArguments,
    answer=CancelAnswer,
    call=cancel_schedule,
    read_only=False,
    destructive=True,
)
