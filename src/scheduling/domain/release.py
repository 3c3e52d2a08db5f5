"""A release: an installation's named list of pinned changes at one time, sent one at a time,
in order. Each item is a schedule (its own id, revision, key, retries, lateness cap).

Protocol v1 has one content per command and no dry run, and the runner holds no person's
delegation when it sends, so a release is not atomic: what was applied stays applied when a
later item is not done, and the rest is held (never sent) until a person resumes or cancels
it. The line itself is kept by the database (migration 0021's triggers): only its head is
ever due, so an item is claimed only once every item before it was applied.

Here: the stored record, the statuses a person sees, the runner's hold decision, what a check
finds of a pin, a reorder, and the sentences that say what happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduling.domain.content import ContentRead
from scheduling.domain.localtime import ResolvedTime
from scheduling.domain.pins import pin_of
from scheduling.domain.statuses import DUE, Status
from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import counted, explain

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
    if applied:
        stay = "stays" if applied == 1 else "stay"
        kept = f" {counted(applied, 'item')} applied before it {stay} applied:"
        kept += " Scheduling cannot undo them."
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
