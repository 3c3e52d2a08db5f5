"""Turn stored rows into what the templates show: local time with its zone, UTC, plain words."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduling.dee_wan import ContentRead
from scheduling.domain.localtime import format_utc, local_wall
from scheduling.domain.pins import pin_of, stale_reason
from scheduling.domain.rights import may_cancel, offers
from scheduling.domain.statuses import Status
from scheduling.http.pages import time_labels
from scheduling.http.pages.wording import KIND, STATUS, explain_answer
from scheduling.repository.schedules import Schedule


@dataclass(frozen=True)
class Moment:
    """What every card is read against: now, and how late the plugin may still send."""

    now_ms: int
    max_lateness_ms: int


def schedule_view(schedule: Schedule, moment: Moment) -> dict[str, Any]:
    zone = schedule.timezone
    last = schedule.attempts[-1] if schedule.attempts else None
    answered = last.http_status if last is not None and last.code == schedule.result_code else None
    view: dict[str, Any] = {
        "id": schedule.id,
        "content_id": schedule.content_id,
        "kind": schedule.kind,
        "kind_label": KIND.get(schedule.kind, schedule.kind),
        "version_id": schedule.version_id,
        "timezone": zone,
        "local_label": _wall(schedule),
        "utc_label": format_utc(schedule.due_at),
        "deadline_label": time_labels.deadline(schedule.due_at, moment.max_lateness_ms),
        "status": schedule.status,
        "status_label": STATUS[schedule.status],
        "result_code": schedule.result_code,
        "result_text": explain_answer(schedule.result_code, answered),
        "requested_by_name": schedule.requested_by_name,
        "revision": schedule.revision,
        "cancelled_label": _cancelled(schedule),
        "attempts": [
            {
                "number": a.attempt,
                "started_label": time_labels.both(a.started_at, zone, seconds=True),
                "finished_at": a.finished_at,
                "code": a.code,
                "http_status": a.http_status,
                "text": explain_answer(a.code, a.http_status),
            }
            for a in schedule.attempts
        ],
        # Filled in by `card` for the page it appears on.
        "title": None,
        "viewer_label": None,
        "stale": None,
        "repin_version": None,
        "cancellable": False,
    }
    view.update(_next_try(schedule, moment))
    return view


def card(
    schedule: Schedule,
    moment: Moment,
    *,
    context_kind: str,
    read: ContentRead | None,
    viewer_zone: str | None = None,
) -> dict[str, Any]:
    """A schedule as one page shows it: with what Dee Wan reports now about its content."""
    view = schedule_view(schedule, moment)
    view["cancellable"] = may_cancel(context_kind, read, schedule)
    if viewer_zone is not None and viewer_zone != schedule.timezone:
        view["viewer_label"] = time_labels.wall(schedule.due_at, viewer_zone)
    if read is None:
        return view
    if context_kind == "manage":
        view["title"] = read.content.title
    view["stale"] = stale_reason(schedule, read)
    fresh = pin_of(schedule.kind, read.content)
    if (
        view["stale"]
        and context_kind == "content"
        and fresh is not None
        and offers(read, schedule.kind, schedule.to_state)
    ):
        view["repin_version"] = fresh
    return view


def cards(
    rows: list[Schedule],
    moment: Moment,
    *,
    context_kind: str,
    reads: Mapping[str, ContentRead | None],
    viewer_zone: str | None = None,
) -> list[dict[str, Any]]:
    """`reads` maps a content's primary id to its read (None when it failed)."""
    return [
        card(
            s,
            moment,
            context_kind=context_kind,
            read=reads.get(s.content_id),
            viewer_zone=viewer_zone,
        )
        for s in rows
    ]


def _wall(schedule: Schedule) -> str:
    """The wall time as the editor entered it, with the zone's abbreviation at due_at."""
    abbreviation = local_wall(schedule.due_at, schedule.timezone).rsplit(" ", 1)[-1]
    return f"{schedule.local_time.replace('T', ' ')} {abbreviation}"


def _cancelled(schedule: Schedule) -> str | None:
    if schedule.status != Status.CANCELLED or schedule.cancelled_at is None:
        return None
    when = time_labels.both(schedule.cancelled_at, schedule.timezone, seconds=True)
    return f"by {schedule.cancelled_by_name} at {when}"


def _next_try(schedule: Schedule, moment: Moment) -> dict[str, str | None]:
    """The tick that will really send a retrying schedule, or why none will."""
    if schedule.status != Status.RETRYING or schedule.next_attempt_at is None:
        return {"next_label": None, "next_note": None}
    planned = time_labels.planned_try(schedule.next_attempt_at, moment.now_ms)
    if planned > schedule.due_at + moment.max_lateness_ms:
        deadline = time_labels.deadline(schedule.due_at, moment.max_lateness_ms)
        return {
            "next_label": None,
            "next_note": f"No more tries: the next run comes after {deadline}, when the plugin stops sending.",
        }
    return {"next_label": time_labels.both(planned, schedule.timezone), "next_note": None}
