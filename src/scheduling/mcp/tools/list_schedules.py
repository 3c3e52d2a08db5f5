"""`list_schedules`: the schedules the key reaches, soonest due first, filtered."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from scheduling.domain.refusals import Refusal
from scheduling.domain.statuses import Status
from scheduling.mcp.shapes import ScheduleShape, schedule_shape
from scheduling.mcp.tool import Answer, Arguments, Instant, Tool
from scheduling.repository import agent_queries, releases
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services

Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class ListArguments(Arguments):
    status: Status | None = Field(None, description="Only schedules in this status.")
    content_id: Id | None = Field(None, description="Only this content's schedules.")
    due_from: Instant | None = Field(None, description="Due at or after this instant.")
    due_to: Instant | None = Field(None, description="Due before this instant.")
    needs_attention: bool = Field(
        False, description="Only those that will try again, or ended not done and need a look."
    )


class ListAnswer(Answer):
    schedules: list[ScheduleShape]
    more: bool = Field(description="More matched than the 50 listed: narrow the filters.")


def _ms(moment: Instant | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


async def list_schedules(services: Services, key: AgentKey, asked: ListArguments) -> ListAnswer:
    content = asked.content_id
    if key.content_id is not None:
        if content is not None and content != key.content_id:
            raise Refusal.explained(403, "other_content")
        content = key.content_id
    filters = agent_queries.Filters(
        content_id=content,
        status=None if asked.status is None else asked.status.value,
        due_from=_ms(asked.due_from),
        due_to=_ms(asked.due_to),
        needs_attention=asked.needs_attention,
    )
    found, more = await agent_queries.listing(services.db, key.installation_id, filters)
    rels = await releases.of_schedules(services.db, [s.release_id or "" for s in found])
    now = services.clock.now_ms()
    return ListAnswer(schedules=[schedule_shape(s, rels, now) for s in found], more=more)


TOOL = Tool(
    name="list_schedules",
    title="List schedules",
    description=(
        "The schedules this key may see, soonest due first (at most 50): filter by status,"
        " content, due window, or those needing attention; a release's item names its"
        " release, its place and the release's status. Reads what Scheduling keeps;"
        " asks Dee Wan nothing."
    ),
    arguments=ListArguments,
    answer=ListAnswer,
    call=list_schedules,
)
