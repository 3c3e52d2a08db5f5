"""A schedule and the rules that judge it without I/O: its attempts, its pin (which version it
sends, and whether Dee Wan still reports that version), who may cancel it, two that collide,
when its installation's alarm clock wakes, and a release: schedules sent in order at one time.

    pending ──▶ running ──▶ completed | refused | retrying ──▶ running …
    pending, retrying ──▶ cancelled (a person) | superseded (a newer schedule) | refused (caps)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduling.domain.outcomes import DUE, NOT_DONE, WAITING, Attempt, Status
from scheduling.domain.protocol import Content, ContentRead
from scheduling.domain.secrets import is_id
from scheduling.domain.times import ResolvedTime, instant_text
from scheduling.domain.wording import Refusal, counted, explain

# -- a schedule and its attempts -------------------------------------------------------------------


@dataclass(frozen=True)
class NewSchedule:
    """What a create stores; the revision and the idempotency key are computed at insert."""

    id: str
    installation_id: str
    content_id: str  # primary id
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    requested_by: str
    requested_by_name: str
    title_sealed: str | None = None  # as the editor saw it, sealed: a digest's line names it
    release_id: str | None = None  # the release it joins (queued: its line makes it due)
    release_position: int | None = None  # its place there; None: at the end
    replaces: str | None = None  # the schedule it is made from, and how (`replaced_as`)
    replaced_as: str | None = None


# A stored title is cut to this many characters.
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class Command:
    """What a stored schedule sends Dee Wan (protocol §6): the same on every retry."""

    idempotency_key: str
    content_id: str  # primary id
    kind: str
    to_state: str
    version_id: str  # the pin
    workflow_revision: int
    requested_by: str
    due_at: int


@dataclass(frozen=True)
class Schedule:
    """One scheduled change of a content item, as stored."""

    id: str
    installation_id: str
    content_id: str
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    revision: int
    idempotency_key: str
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    status: Status
    result_code: str | None
    attempt_count: int
    next_attempt_at: int | None
    requested_by: str
    requested_by_name: str
    created_at: int
    updated_at: int
    cancelled_by_name: str | None = None
    cancelled_at: int | None = None
    ended_by: str | None = None  # which cap ended a `retry_exhausted` one (`outcomes.ENDED_BY`)
    dismissed_by_name: str | None = None
    dismissed_at: int | None = None
    resolved_by: str | None = None  # a later schedule of the same change that was done
    # The other kind's schedule of the same content whose completion put this one's pin out of
    # date while it waited (migration 0017), and when: it would be refused at its time.
    made_stale_by: str | None = None
    made_stale_at: int | None = None
    release_id: str | None = None  # the release it is an item of, at `release_position`
    release_position: int | None = None
    conflict: str | None = None  # what a check found moved since its pin (`releases`)
    conflict_at: int | None = None
    replaces: str | None = None  # the schedule it was made from, and how (`replaced_as`)
    replaced_as: str | None = None
    attempts: tuple[Attempt, ...] = ()

    @property
    def settled(self) -> bool:
        """A refused schedule nobody needs to look at any more: a site admin dismissed it, or
        a later schedule of the same content and change was done."""
        return self.status in (Status.REFUSED, Status.HELD) and (
            self.dismissed_at is not None or self.resolved_by is not None
        )

    @property
    def needs_repin(self) -> bool:
        """Waiting, with a pin the other kind's completed schedule put out of date."""
        return self.made_stale_by is not None and self.status in WAITING


# -- the pin ---------------------------------------------------------------------------------------


def pin_for(kind: str, current_version_id: str, published_version_id: str | None) -> str | None:
    """Publish pins the current version; unpublish pins the published one (None: nothing is)."""
    return current_version_id if kind == "publish" else published_version_id


def pin_of(kind: str, content: Content) -> str | None:
    return pin_for(kind, content.current_version_id, content.published_version_id)


@dataclass(frozen=True)
class ShownVersions:
    """What the page showed: the current version, and the published one (None for none)."""

    current: str
    published: str | None

    def pin(self, kind: str) -> str | None:
        return pin_for(kind, self.current, self.published)


def shown_versions(version_id: str, published_version_id: str) -> ShownVersions:
    """The versions a form says its page showed; a form without them did not come from it."""
    shown = posted_versions(version_id, published_version_id)
    if shown is None:
        raise Refusal(
            400,
            "invalid_request",
            "This form does not say which version it showed. Reload the page and try again.",
        )
    return shown


def posted_versions(version_id: str, published_version_id: str) -> ShownVersions | None:
    """The versions a posted form says its page showed, or None when it does not say them."""
    current, published = version_id.strip(), published_version_id.strip()
    if not is_id(current) or (published and not is_id(published)):
        return None
    return ShownVersions(current, published or None)


def describe_pin(kind: str, version: str | None) -> str:
    """`the current version is ver_13`, `the published version is ver_9`, `nothing is published`."""
    if kind == "publish":
        return f"the current version is {version}"
    return f"the published version is {version}" if version else "nothing is published"


def changed_since_shown(
    kind: str, shown: ShownVersions, read: ContentRead, *, then: str = "press Schedule again"
) -> str | None:
    """Why the pin would differ from what the page showed, in a sentence ending with what to
    `then` do; None when it would not."""
    if kind not in ("publish", "unpublish"):
        return None
    seen, now = shown.pin(kind), pin_of(kind, read.content)
    if seen == now:
        return None
    what = "the current version" if kind == "publish" else "the published version"
    saw = f"{what} {seen}" if seen else "nothing published"
    return (
        f"The content changed since this page was shown: you saw {saw}, and "
        f"{describe_pin(kind, now)} now. Nothing was scheduled; check the page below, "
        f"then {then}."
    )


def stale_reason(schedule: Schedule, read: ContentRead) -> str | None:
    """For a waiting schedule Dee Wan would refuse today: one sentence saying why."""
    if schedule.status not in WAITING:
        return None
    now = pin_of(schedule.kind, read.content)
    if now != schedule.version_id:
        return (
            f"It will be refused: it pins {schedule.version_id}; "
            f"{describe_pin(schedule.kind, now)} now."
        )
    if read.workflow.revision != schedule.workflow_revision:
        return (
            f"It will be refused: it was made at workflow revision {schedule.workflow_revision};"
            f" the content is at revision {read.workflow.revision} now."
        )
    return None


# -- a waiting publish and unpublish of one content ------------------------------------------------

# A card's role in a collision (`data-conflict`).
STALE_AFTER = "stale-after"  # refused after the other runs, unless pinned again
MAKES_STALE = "makes-stale"  # runs first and puts the other's pin out of date

WAYS_OUT = (
    "Either cancel one of them, or keep both knowing that the later one needs a new pin"
    " once the first has run (its card will say so, with the one-step re-pin)."
)


@dataclass(frozen=True)
class Conflict:
    """A collision with another waiting schedule of the content: which way, and its words."""

    role: str  # STALE_AFTER or MAKES_STALE
    other_id: str
    text: str


def named(schedule: Schedule) -> str:
    """`the unpublish of version ver_1 at 9 Mar 2026, 09:00 CET (Europe/Paris), 08:00 UTC`."""
    when = instant_text(schedule.due_at, schedule.timezone)
    return f"the {schedule.kind} of version {schedule.version_id} at {when}"


def _next_send(s: Schedule) -> int:
    """When the runner takes it up: its next try (a retrying one's), else its time."""
    return s.next_attempt_at if s.next_attempt_at is not None else s.due_at


def first_of(a: Schedule, b: Schedule) -> tuple[Schedule, Schedule]:
    """The one the runner sends first, and the other (its due query's order: the time it is
    taken up, then id)."""
    return (a, b) if (_next_send(a), a.id) <= (_next_send(b), b.id) else (b, a)


def conflicts(schedules: Iterable[Schedule]) -> dict[str, Conflict]:
    """Each waiting schedule that collides with the other kind's waiting one of its content
    (and has not already been made stale): its role and what its card says."""
    waiting: dict[tuple[str, str], dict[str, Schedule]] = {}
    for s in schedules:
        if s.status in WAITING and s.made_stale_by is None:
            waiting.setdefault((s.installation_id, s.content_id), {})[s.kind] = s
    found: dict[str, Conflict] = {}
    for kinds in waiting.values():
        if len(kinds) < 2:
            continue
        first, second = first_of(*kinds.values())
        if _next_send(first) // 60_000 == _next_send(second) // 60_000:
            # The same minute: both may leave together, and whichever Dee Wan applies first
            # makes the other refused. The roles still follow the runner's order.
            same = (
                " Both are due at the same minute, so whichever Dee Wan applies first makes"
                " the other one refused."
            )
            found[second.id] = Conflict(
                STALE_AFTER, first.id, f"Will likely be refused: {named(first)}.{same} {WAYS_OUT}"
            )
            found[first.id] = Conflict(
                MAKES_STALE,
                second.id,
                f"Collides with {named(second)}. Both are due at the same minute: that"
                " schedule's card says what to do.",
            )
            continue
        found[second.id] = Conflict(
            STALE_AFTER,
            first.id,
            f"Will be refused unless pinned again: {named(first)} runs first and changes"
            f" the content, so Dee Wan will refuse this {second.kind} at its time (its pin will"
            f" be out of date). {WAYS_OUT}",
        )
        found[first.id] = Conflict(
            MAKES_STALE,
            second.id,
            f"Runs first and makes {named(second)} out of date: that schedule's card says"
            " what to do.",
        )
    return found


def before_text(live: Schedule) -> str:
    """Said beside the other kind's choice on the form, before Schedule is pressed."""
    return (
        f"T{named(live)[1:]} is waiting for this content. Whichever of"
        " the two runs second will be refused: the first changes the content, so the"
        " second's pin is out of date by then."
    )


def needs_repin_text(schedule: Schedule, zone: str | None = None) -> str:
    """A waiting schedule the other kind's completion put out of date (`made_stale_by`)."""
    return needs_repin_said(schedule.kind, schedule.made_stale_at, zone or schedule.timezone)


def needs_repin_said(kind: str, done_at: int | None, zone: str) -> str:
    """The card's sentence, and its stale notice's: `kind` is the one made stale."""
    other = "an unpublish" if kind == "publish" else "a publish"
    done = f" at {instant_text(done_at, zone)}" if done_at is not None else ""
    return (
        f"Needs a new pin: {other} of this content was done{done}, so Dee Wan would refuse"
        f" this {kind} at its time. Open the content from Dee Wan and pin it again in one"
        " step, at the same time; or cancel it."
    )


# -- who may cancel --------------------------------------------------------------------------------

Change = tuple[str, str]  # (kind, to), as `workflow.transitions` lists it


def offered_by(read: ContentRead) -> frozenset[Change]:
    return frozenset((t.kind, t.to) for t in read.workflow.transitions)


@dataclass(frozen=True)
class Rights:
    """What a launch lets the person do: manage, or schedule one content's changes."""

    manage: bool
    content_id: str | None = None  # a content launch's content (primary id)
    offered: frozenset[Change] = frozenset()

    @classmethod
    def everything(cls) -> Rights:
        return cls(manage=True)

    @classmethod
    def of_content(cls, content_id: str | None, offered: Iterable[Change]) -> Rights:
        return cls(manage=False, content_id=content_id, offered=frozenset(offered))

    @classmethod
    def read(cls, read: ContentRead) -> Rights:
        return cls.of_content(read.content.primary_id, offered_by(read))

    def offers(self, kind: str, to: str) -> bool:
        """May this person make this change to their content now?"""
        return (kind, to) in self.offered

    def may_decide(self, kind: str) -> bool:
        """May this person confirm or decline an agent's proposal of a `kind` change? A
        manage launch may; a content launch only where Dee Wan offered a change of that kind."""
        return self.manage or any(offered == kind for offered, _ in self.offered)

    def cancel_refusal(self, schedule: Schedule) -> str | None:
        """Why this person may not cancel `schedule` (a refusal code), None when they may.

        From a content launch: only that content's schedules, and only a change Dee Wan
        offered them. Otherwise a viewer, told they may not publish, could still cancel
        an editor's schedule from the same page.
        """
        if self.manage:
            return None
        if schedule.content_id != self.content_id:
            return "other_content"
        if not self.offers(schedule.kind, schedule.to_state):
            return "cancel_not_allowed"
        return None

    def shows_cancel(self, schedule: Schedule) -> bool:
        """The Cancel button: a waiting schedule this person may cancel."""
        return schedule.status in WAITING and self.cancel_refusal(schedule) is None

    def shows_dismiss(self, schedule: Schedule) -> bool:
        """The Dismiss button: a refused (or held) schedule still in Needs attention, on the manage
        view (the installation's overview, which Dee Wan offers to site admins)."""
        return self.manage and schedule.status in NOT_DONE and not schedule.settled


# -- when a clock wakes ----------------------------------------------------------------------------

# The watchdog leaves a due row this long to its installation's clock before it sends it
# itself: alarms fire within milliseconds, and an installation's burst of 100 rows at a
# 200 ms Dee Wan takes its clock about 4 s; Durable Objects may delay an alarm "up to a
# minute" during a failover, and then the watchdog sends what the clock did not.
WATCHDOG_GRACE_MS = 30_000
# Each minute the watchdog tells the clocks of what is due before its next run, with a
# minute to spare: a clock that was never told (or lost its alarm) still wakes on time.
WATCHDOG_HORIZON_MS = 2 * 60_000
# An alarm whose rows the per-installation cap holds back (another runner's claims fill it)
# tries again after this long rather than at once.
HELD_BACK_RETRY_MS = 1_000
# An alarm that failed wakes again after 2 s, doubling to a minute (as the platform's own
# retries of a throwing alarm, which stop after six).
FIRST_RETRY_MS = 2_000
MAX_RETRY_MS = 60_000


def wake_for(due_at: int, lead_ms: int) -> int:
    """When the clock of a row due at `due_at` wakes."""
    return due_at - lead_ms


def retry_after_failure(now: int, failures: int) -> int:
    """When a clock whose alarm failed `failures` times in a row (1 for the first) wakes."""
    return now + min(MAX_RETRY_MS, FIRST_RETRY_MS << min(16, max(0, failures - 1)))


# -- a release -------------------------------------------------------------------------------------

# The limits a release keeps (Contentful allows 200 entries a release).
MAX_RELEASE_ITEMS = 200
MAX_WAITING_RELEASES = 100
MAX_NAME_CHARS = 100

# Why an item ended unsent, held: a collision that has run made its pin stale, a check found
# its pin moved, or an earlier item of its release was not done.
HELD_STALE = "held_stale"
HELD_CONFLICT = "held_conflict"
RELEASE_HELD = "release_held"
HOLD_CODES = (HELD_STALE, HELD_CONFLICT, RELEASE_HELD)

# What a check finds moved since an item was pinned.
VERSION_MOVED = "version_moved"
REVISION_MOVED = "revision_moved"


class ReleaseStatus(StrEnum):
    WAITING = "waiting"
    HELD = "held"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


# What a person sees (`data-release-status`): the stored statuses and two read from the items.
CONFLICT = "conflict"  # waiting, and an item is known stale
RUNNING = "running"  # waiting, its time has come and items are live


@dataclass(frozen=True)
class Release:
    id: str
    installation_id: str
    name: str
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    status: ReleaseStatus
    created_by: str
    created_by_name: str
    created_at: int
    updated_at: int
    held_by: str | None = None
    held_code: str | None = None
    held_at: int | None = None
    ended_at: int | None = None
    checked_at: int | None = None
    checked_by_name: str | None = None
    cancelled_by_name: str | None = None
    # As read with it: its items, the live ones, and the waiting ones known to be refused.
    items: int = 0
    live: int = 0
    stale: int = 0

    def shown(self, now: int) -> str:
        return shown_status(self.status, self.due_at, live=self.live, stale=self.stale, now=now)


def new_release(
    release_id: str,
    installation_id: str,
    person: tuple[str, str],
    name: str,
    when: ResolvedTime,
    now: int,
) -> Release:
    """A waiting release named `name` at `when`, made by `person` (id, name)."""
    made_by, made_by_name = person
    return Release(
        release_id, installation_id, name.strip(), when.due_at_ms, when.timezone,
        when.local_time, when.fold, ReleaseStatus.WAITING, made_by, made_by_name, now, now,
    )  # fmt: skip


@dataclass(frozen=True)
class ReleaseLine:
    """A due item's release as the runner reads it with the row: what its events say."""

    id: str
    name: str
    due_at: int
    timezone: str
    applied: tuple[str, ...] = ()  # items applied so far, in order
    behind: tuple[str, ...] = ()  # items queued behind this one, in order


def shown_status(stored: str, due_at: int, *, live: int, stale: int, now: int) -> str:
    """The release's status as a person reads it: `stale` of its `live` items are known to
    be refused (a check found the pin moved, or a collision ran); its time has come while
    items are live: running."""
    if stored != ReleaseStatus.WAITING:
        return stored
    if stale:
        return CONFLICT
    if live and due_at <= now:
        return RUNNING
    return ReleaseStatus.WAITING


def hold_code(status: Status, made_stale_by: str | None, conflict: str | None) -> str | None:
    """At claim: a due row the plugin already knows Dee Wan would refuse ends unsent, held,
    with its code; None to claim it. A row reclaimed from a runner that died was sent already:
    it goes again with its key (Dee Wan replays what it applied)."""
    if status not in DUE:
        return None
    if made_stale_by is not None:
        return HELD_STALE
    if conflict is not None:
        return HELD_CONFLICT
    return None


def release_event(status: Status, line: ReleaseLine | None) -> str | None:
    """The release notice an item's end raises: held when it ends not done, completed when it
    is applied with nothing queued behind it; None for an item outside a release, or an end
    that moves nothing (a retry)."""
    if line is None:
        return None
    if status in (Status.REFUSED, Status.HELD):
        return "release.held"
    if status == Status.COMPLETED and not line.behind:
        return "release.completed"
    return None


def unsent_status(code: str) -> Status:
    """Where a row ended without a send goes: held for a hold, refused otherwise."""
    return Status.HELD if code in HOLD_CODES else Status.REFUSED


def conflict_of(
    kind: str, version_id: str, workflow_revision: int, read: ContentRead
) -> str | None:
    """What moved since the pin, as Dee Wan reports the content now; None while it is current.
    Which changes Dee Wan offers depends on who reads, so that is the page's to say, never a
    conflict: one person's check cannot hold another's change."""
    if pin_of(kind, read.content) != version_id:
        return VERSION_MOVED
    if read.workflow.revision != workflow_revision:
        return REVISION_MOVED
    return None


def reordered(order: Sequence[str], item: str, step: int) -> list[str] | None:
    """`order` with `item` moved `step` places (-1: up, 1: down); None when it cannot move
    that way (not there, or already first or last)."""
    if item not in order:
        return None
    at = order.index(item)
    to = at + step
    if step not in (-1, 1) or not 0 <= to < len(order):
        return None
    moved = list(order)
    moved[at], moved[to] = moved[to], moved[at]
    return moved


def name_refusal(name: str) -> str | None:
    """Why a release's name cannot be taken (a sentence), None when it can."""
    if not name.strip():
        return "Give the release a name, so people know it when they see it."
    if len(name.strip()) > MAX_NAME_CHARS:
        return f"A release's name has at most {MAX_NAME_CHARS} characters."
    return None


def held_text(line: ReleaseLine, item_id: str, code: str | None, at: int) -> str:
    """What a held release says, before and after, in the one time language."""
    applied = len(line.applied)
    if applied == 1:
        kept = " The item applied before it stays applied: Scheduling cannot undo it."
    elif applied:
        kept = (
            f" The {applied:,} items applied before it stay applied: Scheduling cannot undo them."
        )
    else:
        kept = " Nothing of it was applied."
    rest = len(line.behind)
    were = "was" if rest == 1 else "were"
    held = f" {counted(rest, 'item')} after it {were} not sent." if rest else ""
    why = explain(code).removesuffix(".")
    because = f" ({why})" if why else ""
    return (
        f"Held at {instant_text(at, line.timezone)}: item {item_id} was not done{because}."
        f"{kept}{held} Resume the rest, or cancel it, on the release's page."
    )


def completed_text(line: ReleaseLine, at: int) -> str:
    """What a completed release says."""
    return (
        f"Completed at {instant_text(at, line.timezone)}: every item of “{line.name}” was"
        " applied, in order."
    )
