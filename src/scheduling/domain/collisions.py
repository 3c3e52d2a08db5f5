"""Two schedules of one content that collide: a publish and an unpublish, both waiting.

Whichever runs first changes the content's workflow revision (a publish its published
version too), which the other was pinned to: Dee Wan then refuses the other
`scheduled_target_stale` at its time. No change is lost by saying so early, so the form
says it before Schedule is pressed; afterwards the card of the one to be refused explains
it, with the ways out, and the other card and the receipt point to it, so a page says it
once. Once the first is done the other says at once that it needs a new pin (migration 0017
marks it). The words never quote a code: that is for support.

Each schedule is named in the one time language (`time_words.instant_text`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import WAITING
from scheduling.domain.time_words import instant_text

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
    other = "unpublish" if kind == "publish" else "publish"
    done = f" at {instant_text(done_at, zone)}" if done_at is not None else ""
    return (
        f"Needs a new pin: a {other} of this content was done{done}, so Dee Wan would refuse"
        f" this {kind} at its time. Open the content from Dee Wan and pin it again in one"
        " step, at the same time; or cancel it."
    )
