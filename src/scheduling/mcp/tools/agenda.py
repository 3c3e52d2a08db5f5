"""`agenda`: what is due in a window (waiting schedules and pending proposals), in a zone."""

from __future__ import annotations

from pydantic import Field

from scheduling.domain.localtime import rfc3339
from scheduling.domain.refusals import Refusal
from scheduling.domain.statuses import LIVE
from scheduling.domain.time_words import instant_text
from scheduling.domain.timezones import canonical_zone, zone_suggestions
from scheduling.mcp.tool import Answer, Arguments, Instant, Tool
from scheduling.repository import agent_queries, proposals
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services

HOUR_MS = 3_600_000


class AgendaArguments(Arguments):
    timezone: str = Field("UTC", max_length=64, description="IANA zone to write times in.")
    start: Instant | None = Field(None, description="Window start; now when not given.")
    hours: int = Field(
        24, ge=1, le=31 * 24, description="Window length in hours (at most 31 days)."
    )


class AgendaItem(Answer):
    at: str  # RFC 3339, UTC
    when: str  # in words, in the asked zone
    what: str  # schedule | proposal
    id: str
    content_id: str
    change: str
    status: str
    release_id: str | None = None  # a release's item (a proposal: the release it would join)


class AgendaAnswer(Answer):
    timezone: str
    start: str
    end: str
    items: list[AgendaItem]


async def agenda(services: Services, key: AgentKey, asked: AgendaArguments) -> AgendaAnswer:
    zone = canonical_zone(asked.timezone.strip())
    if zone is None:
        near = ", ".join(zone_suggestions(asked.timezone)[:3])
        raise Refusal(
            422,
            "unknown_timezone",
            "Use an IANA time zone name." + (f" Did you mean {near}?" if near else ""),
        )
    now = services.clock.now_ms()
    start = now if asked.start is None else int(asked.start.timestamp() * 1000)
    end = start + asked.hours * HOUR_MS
    filters = agent_queries.Filters(content_id=key.content_id, due_from=start, due_to=end)
    found, _ = await agent_queries.listing(services.db, key.installation_id, filters)
    waiting = [s for s in found if s.status in LIVE]
    pending = [
        p
        for p in await proposals.pending(services.db, key.installation_id, key.content_id, now, 50)
        if start <= p.due_at < end
    ]
    items = [
        AgendaItem(
            at=rfc3339(s.due_at),
            when=instant_text(s.due_at, zone),
            what="schedule",
            id=s.id,
            content_id=s.content_id,
            change=s.kind,
            status=s.status.value,
            release_id=s.release_id,
        )
        for s in waiting
    ] + [
        AgendaItem(
            at=rfc3339(p.due_at),
            when=instant_text(p.due_at, zone),
            what="proposal",
            id=p.id,
            content_id=p.content_id,
            change=p.kind,
            status="pending",
            release_id=p.release_id,
        )
        for p in pending
    ]
    items.sort(key=lambda item: item.at)
    return AgendaAnswer(timezone=zone, start=rfc3339(start), end=rfc3339(end), items=items)


TOOL = Tool(
    name="agenda",
    title="Agenda",
    description=(
        "What is due in a window (24 hours from now unless asked): waiting schedules and"
        " proposals still waiting for a person, with times written in the zone asked."
        " Asks Dee Wan nothing."
    ),
    arguments=AgendaArguments,
    answer=AgendaAnswer,
    call=agenda,
)
