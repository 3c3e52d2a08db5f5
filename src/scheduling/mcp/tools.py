"""The tools an agent may call (`TOOLS`, each an `@tool` call here): its words, its input and
output as pydantic models (their JSON Schemas are what `tools/list` gives), made for an agent
key; a call that may not go on raises a `Refusal`. Answers hold ids, changes and instants,
never a title, a token or a key. Agents propose, people decide: no tool publishes or pins.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from scheduling.actions.agents import MAX_NOTE_CHARS, Proposed, propose, withdraw
from scheduling.actions.schedules import cancel_allowed
from scheduling.domain.outcomes import LIVE, WAITING, Status
from scheduling.domain.schedules import Release, Schedule
from scheduling.domain.secrets import is_id
from scheduling.domain.times import canonical_zone, instant_text, rfc3339, zone_suggestions
from scheduling.domain.wording import STATUS, Refusal
from scheduling.operator.metrics import Family, Sample
from scheduling.ports import Database
from scheduling.repository import agents, releases
from scheduling.repository.agents import Proposal
from scheduling.repository.installations import AgentKey
from scheduling.services import Services

# -- a tool ----------------------------------------------------------------------------------------


class Arguments(BaseModel):
    """A tool's input: strict about what it takes, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_EARLIEST, _LATEST = (datetime(year, 1, 1, tzinfo=UTC).timestamp() for year in (1970, 9000))


def _within_reach(moment: datetime) -> datetime:
    if not _EARLIEST <= moment.timestamp() < _LATEST:
        raise ValueError("an instant between 1970 and 9000 is expected")
    return moment


# An RFC 3339 instant whose windows and words stay within the years Python can write.
Instant = Annotated[AwareDatetime, AfterValidator(_within_reach)]


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


Call = TypeVar("Call", bound=Callable[..., Awaitable[Answer]])


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    arguments: type[Arguments]
    answer: type[Answer]
    call: Callable[[Services, AgentKey, Any], Awaitable[Answer]]
    read_only: bool
    destructive: bool  # it ends or undoes something, not only adds

    def listed(self) -> dict[str, Any]:
        """The tool as `tools/list` gives it."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.arguments.model_json_schema(),
            "outputSchema": self.answer.model_json_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "openWorldHint": False,
            },
        }


TOOLS: dict[str, Tool] = {}


def tool(
    title: str, description: str, *, read_only: bool = True, destructive: bool = False
) -> Callable[[Call], Call]:
    """Adds the call to `TOOLS` under its function's name, its input and output the models its
    annotations name."""

    def listed(call: Call) -> Call:
        hints = get_type_hints(call)
        made = Tool(
            call.__name__,
            title,
            description,
            hints["asked"],
            hints["return"],
            call,
            read_only,
            destructive,
        )
        TOOLS[made.name] = made
        return call

    return listed


# -- shapes ----------------------------------------------------------------------------------------


class AttemptShape(Answer):
    number: int
    started_at: str
    finished_at: str | None
    code: str | None
    http_status: int | None


class ReleaseRef(Answer):
    """The release an item belongs to, and its place in the send order."""

    id: str
    name: str
    position: int
    status: str  # waiting, conflict, running, held, completed, cancelled


class ScheduleShape(Answer):
    id: str
    content_id: str
    change: str  # publish | unpublish
    to: str
    version_id: str
    status: str
    status_words: str
    due_at: str
    when: str  # in words, in its zone
    local_time: str
    timezone: str
    fold: str | None
    requested_by_name: str
    result_code: str | None
    attempts: int
    release: ReleaseRef | None = None


class ProposalShape(Answer):
    id: str
    content_id: str
    change: str
    to: str | None
    local_time: str
    timezone: str
    fold: str | None
    due_at: str
    when: str
    note: str
    status: str  # pending, confirmed, declined, withdrawn, expired
    for_person: str
    schedule_id: str | None
    release_id: str | None = None  # it adds the change to this waiting release
    changes: str | None = None  # it moves, or sends now (`changes_as`), this waiting schedule
    changes_as: str | None = None


def schedule_shape(
    schedule: Schedule, releases: Mapping[str, Release] | None = None, now: int = 0
) -> ScheduleShape:
    """`releases`: the items' releases by id (read with them), for `release`."""
    release = (releases or {}).get(schedule.release_id or "")
    return ScheduleShape(
        release=None
        if release is None
        else ReleaseRef(
            id=release.id,
            name=release.name,
            position=schedule.release_position or 0,
            status=release.shown(now),
        ),
        id=schedule.id,
        content_id=schedule.content_id,
        change=schedule.kind,
        to=schedule.to_state,
        version_id=schedule.version_id,
        status=schedule.status.value,
        status_words=STATUS[schedule.status],
        due_at=rfc3339(schedule.due_at),
        when=instant_text(schedule.due_at, schedule.timezone),
        local_time=schedule.local_time,
        timezone=schedule.timezone,
        fold=schedule.fold,
        requested_by_name=schedule.requested_by_name,
        result_code=schedule.result_code,
        attempts=schedule.attempt_count,
    )


def attempt_shapes(schedule: Schedule) -> list[AttemptShape]:
    return [
        AttemptShape(
            number=a.number,
            started_at=rfc3339(a.started_at),
            finished_at=None if a.finished_at is None else rfc3339(a.finished_at),
            code=a.code,
            http_status=a.http_status,
        )
        for a in schedule.attempts
    ]


def proposal_shape(proposal: Proposal, now: int) -> ProposalShape:
    return ProposalShape(
        id=proposal.id,
        content_id=proposal.content_id,
        change=proposal.kind,
        to=proposal.to_state,
        local_time=proposal.local_time,
        timezone=proposal.timezone,
        fold=proposal.fold,
        due_at=rfc3339(proposal.due_at),
        when=instant_text(proposal.due_at, proposal.timezone),
        note=proposal.note,
        status=proposal.status_at(now),
        for_person=proposal.person_name,
        schedule_id=proposal.schedule_id,
        release_id=proposal.release_id,
        changes=proposal.changes,
        changes_as=proposal.changes_as,
    )


# -- calls counted ---------------------------------------------------------------------------------


async def agent_call_families(db: Database) -> list[Family]:
    totals = await agents.totals(db)
    samples = tuple(
        Sample("_total", (("tool", tool), ("outcome", outcome)), totals.get((tool, outcome), 0))
        for tool in TOOLS
        for outcome in agents.OUTCOMES
    )
    return [
        Family(
            "scheduling_agent_calls",
            "counter",
            "Tool calls agents made through POST /mcp, by tool and outcome.",
            samples,
        )
    ]


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


@tool(
    "List schedules",
    "The schedules this key may see, soonest due first (at most 50): filter by status,"
    " content, due window, or those needing attention; a release's item names its"
    " release, its place and the release's status. Reads what Scheduling keeps;"
    " asks Dee Wan nothing.",
)
async def list_schedules(services: Services, key: AgentKey, asked: ListArguments) -> ListAnswer:
    content = asked.content_id
    if key.content_id is not None:
        if content is not None and content != key.content_id:
            raise Refusal.explained(403, "other_content")
        content = key.content_id
    filters = agents.Filters(
        content_id=content,
        status=None if asked.status is None else asked.status.value,
        due_from=_ms(asked.due_from),
        due_to=_ms(asked.due_to),
        needs_attention=asked.needs_attention,
    )
    found, more = await agents.listing(services.db, key.installation_id, filters)
    rels = await releases.of_schedules(services.db, [s.release_id or "" for s in found])
    now = services.clock.now_ms()
    return ListAnswer(schedules=[schedule_shape(s, rels, now) for s in found], more=more)


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
        await agents.one(services.db, key.installation_id, schedule_id)
        if is_id(schedule_id)
        else None
    )
    if found is None or not key.reaches(found.content_id):
        raise Refusal.explained(404, "schedule_not_found")
    return found


@tool(
    "Get a schedule",
    "One schedule: its change, pinned version, time, status, each attempt to send it,"
    " and its history (who proposed, confirmed, cancelled). Asks Dee Wan nothing.",
)
async def get_schedule(services: Services, key: AgentKey, asked: GetArguments) -> GetAnswer:
    found = await reachable(services, key, asked.schedule_id)
    proposal = await agents.of_schedule(services.db, key.installation_id, found.id)
    rels = await releases.of_schedules(services.db, [found.release_id or ""])
    return GetAnswer(
        schedule=schedule_shape(found, rels, services.clock.now_ms()),
        attempts=attempt_shapes(found),
        history=history(found, proposal),
    )


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


@tool(
    "Agenda",
    "What is due in a window (24 hours from now unless asked): waiting schedules and"
    " proposals still waiting for a person, with times written in the zone asked."
    " Asks Dee Wan nothing.",
)
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
    filters = agents.Filters(content_id=key.content_id, due_from=start, due_to=end)
    found, _ = await agents.listing(services.db, key.installation_id, filters)
    pending = await agents.pending(services.db, key.installation_id, key.content_id, now, 50)

    def item(what: str, of: Schedule | Proposal, status: str) -> AgendaItem:
        return AgendaItem(
            at=rfc3339(of.due_at),
            when=instant_text(of.due_at, zone),
            what=what,
            id=of.id,
            content_id=of.content_id,
            change=of.kind,
            status=status,
            release_id=of.release_id,
        )

    items = [item("schedule", s, s.status.value) for s in found if s.status in LIVE] + [
        item("proposal", p, "pending") for p in pending if start <= p.due_at < end
    ]
    items.sort(key=lambda shown: shown.at)
    return AgendaAnswer(timezone=zone, start=rfc3339(start), end=rfc3339(end), items=items)


class ProposeArguments(Arguments):
    content_id: str = Field(min_length=1, max_length=64, description="The content's id in Dee Wan.")
    change: Literal["publish", "unpublish"]
    to: str | None = Field(
        None,
        max_length=64,
        description="The workflow state to move to; if not given, the one Dee Wan offers.",
    )
    local_time: str = Field(
        max_length=16, description="The wall time, YYYY-MM-DDTHH:MM, in `timezone`."
    )
    timezone: str = Field(max_length=64, description="An IANA time zone, such as Europe/Paris.")
    fold: Literal["earlier", "later"] | None = Field(
        None, description="For a wall time that happens twice (clocks going back): which one."
    )
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="A note for the person.")
    release: str | None = Field(
        None,
        max_length=64,
        description="A waiting release's id (rel_…) to add the change to: its time is used.",
    )


class ProposeAnswer(Answer):
    proposal: ProposalShape
    next_step: str


@tool(
    "Propose a schedule",
    "Propose publishing or unpublishing a content at a wall time in a time zone. It makes"
    " a proposal, not a schedule: a person confirms it on their page, which pins the"
    " version they see. A time in a gap, a time that happens twice without `fold`, an"
    " unknown zone or a past time is refused with suggestions. With `release`, the change"
    " joins that waiting release, at its time (the time given is not used).",
    read_only=False,
)
async def propose_schedule(
    services: Services, key: AgentKey, asked: ProposeArguments
) -> ProposeAnswer:
    made = await propose(services, key, Proposed(**asked.model_dump()))
    return ProposeAnswer(
        proposal=proposal_shape(made, services.clock.now_ms()),
        next_step=(
            f"Nothing is scheduled yet: {key.person_name}, or someone who may make this change,"
            " confirms it on the content's Scheduling page in Dee Wan. It expires at its time."
        ),
    )


class WithdrawArguments(Arguments):
    proposal_id: str = Field(min_length=1, max_length=64)


class WithdrawAnswer(Answer):
    proposal: ProposalShape


@tool(
    "Withdraw a proposal",
    "Take back a proposal this key made that no person has confirmed or declined yet.",
    read_only=False,
    destructive=True,
)
async def withdraw_proposal(
    services: Services, key: AgentKey, asked: WithdrawArguments
) -> WithdrawAnswer:
    ended = await withdraw(services, key, asked.proposal_id)
    return WithdrawAnswer(proposal=proposal_shape(ended, services.clock.now_ms()))


class CancelArguments(Arguments):
    schedule_id: str = Field(min_length=1, max_length=64)


class CancelAnswer(Answer):
    schedule: ScheduleShape


@tool(
    "Cancel a schedule",
    "Cancel a waiting schedule that came from one of this key's confirmed proposals."
    " Never calls Dee Wan, never undoes a change already made.",
    read_only=False,
    destructive=True,
)
async def cancel_schedule(
    services: Services, key: AgentKey, asked: CancelArguments
) -> CancelAnswer:
    found = await reachable(services, key, asked.schedule_id)
    proposal = await agents.of_schedule(services.db, key.installation_id, found.id)
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


@tool(
    "Get a release",
    "A release: its name, time, status (waiting, conflict, running, held, completed,"
    " cancelled), what held it, and its items in send order (those this key may see)."
    " Asks Dee Wan nothing.",
)
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


class ChangeArguments(Arguments):
    schedule_id: str = Field(min_length=1, max_length=64, description="A waiting schedule's id.")
    send_now: bool = Field(False, description="Send it now instead of at its time.")
    local_time: str | None = Field(
        None, max_length=16, description="Its new wall time, YYYY-MM-DDTHH:MM (not with send_now)."
    )
    timezone: str | None = Field(
        None, max_length=64, description="An IANA zone; its own if not given."
    )
    fold: Literal["earlier", "later"] | None = None
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="A note for the person.")


class ChangeAnswer(Answer):
    proposal: ProposalShape
    next_step: str


@tool(
    "Propose moving a schedule, or sending it now",
    "Propose a waiting schedule's new wall time (the same time rules as a schedule's), or"
    " sending it now instead of at its time. It makes a proposal, not a change: a person"
    " confirms it on their page. A release's item is moved with its release, not alone.",
    read_only=False,
)
async def propose_change(services: Services, key: AgentKey, asked: ChangeArguments) -> ChangeAnswer:
    old = await reachable(services, key, asked.schedule_id)
    if old.status not in WAITING or old.release_id is not None:
        raise Refusal.explained(409, "release_item_alone" if old.release_id else "not_repinnable")
    if asked.send_now == (asked.local_time is not None):
        raise Refusal(422, "invalid_change", "Give either a new local_time, or send_now: true.")
    made = await propose(
        services,
        key,
        Proposed(
            content_id=old.content_id,
            change=old.kind,
            to=old.to_state,
            local_time=old.local_time if asked.send_now else asked.local_time or "",
            timezone=old.timezone if asked.send_now else asked.timezone or old.timezone,
            fold=old.fold if asked.send_now else asked.fold,
            note=asked.note,
            changes=old.id,
            changes_as="sent_now" if asked.send_now else "moved",
        ),
    )
    return ChangeAnswer(
        proposal=proposal_shape(made, services.clock.now_ms()),
        next_step=(
            "Nothing is changed yet: a person who may make this change confirms it on the"
            " content's Scheduling page in Dee Wan, which reads the content again and pins what"
            " it shows. It expires at the new time (sent now: at the schedule's own time)."
        ),
    )
