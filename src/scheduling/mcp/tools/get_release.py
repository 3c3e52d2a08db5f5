"""`get_release`: a release, its status and its items in send order."""

from __future__ import annotations

from pydantic import Field

from scheduling.domain.localtime import rfc3339
from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.time_words import instant_text
from scheduling.mcp.shapes import ScheduleShape, schedule_shape
from scheduling.mcp.tool import Answer, Arguments, Tool
from scheduling.repository import releases
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services


class GetReleaseArguments(Arguments):
    release_id: str = Field(min_length=1, max_length=64, description="The release's id (rel_…).")


class GetReleaseAnswer(Answer):
    id: str
    name: str
    status: str = Field(description="waiting, conflict, running, held, completed or cancelled.")
    due_at: str
    when: str
    local_time: str
    timezone: str
    held_by: str | None = Field(description="The item that was not done, while it is held.")
    held_code: str | None
    items: list[ScheduleShape] = Field(description="The items this key may see, in send order.")
    more: bool = Field(description="More items than listed (50 at a time on the page).")
    note: str


async def get_release(
    services: Services, key: AgentKey, asked: GetReleaseArguments
) -> GetReleaseAnswer:
    found = (
        await releases.get(services.db, key.installation_id, asked.release_id)
        if is_id(asked.release_id)
        else None
    )
    if found is None:
        raise Refusal.explained(404, "release_not_found")
    page = await releases.items(services.db, key.installation_id, found.id)
    now = services.clock.now_ms()
    seen = [s for s in page.schedules if key.reaches(s.content_id)]
    return GetReleaseAnswer(
        id=found.id,
        name=found.name,
        status=found.shown(now),
        due_at=rfc3339(found.due_at),
        when=instant_text(found.due_at, found.timezone),
        local_time=found.local_time,
        timezone=found.timezone,
        held_by=found.held_by,
        held_code=found.held_code,
        items=[schedule_shape(s, {found.id: found}, now) for s in seen],
        more=page.has_next,
        note=(
            "Its items are sent one at a time, in order; an item not done holds the rest"
            " (never sent) until a person resumes or cancels it, and what was applied stays"
            " applied. Asks Dee Wan nothing."
        ),
    )


TOOL = Tool(
    name="get_release",
    title="Get a release",
    description=(
        "A release: its name, time, status (waiting, conflict, running, held, completed,"
        " cancelled), what held it, and its items in send order (those this key may see)."
        " Asks Dee Wan nothing."
    ),
    arguments=GetReleaseArguments,
    answer=GetReleaseAnswer,
    call=get_release,
)
