"""Turn stored rows into what the templates show: local time with its zone, UTC, plain words."""

from __future__ import annotations

from typing import Any

from ..localtime import format_utc, local_wall
from ..repository.schedules import Schedule
from .wording import KIND, STATUS, explain


def schedule_view(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "content_id": schedule.content_id,
        "kind_label": KIND.get(schedule.kind, schedule.kind),
        "version_id": schedule.version_id,
        "timezone": schedule.timezone,
        "local_label": _wall(schedule),
        "utc_label": format_utc(schedule.due_at),
        "status": schedule.status,
        "status_label": STATUS.get(schedule.status, schedule.status),
        "result_code": schedule.result_code,
        "result_text": explain(schedule.result_code),
        "next_label": format_utc(schedule.next_attempt_at) if schedule.next_attempt_at else None,
        "requested_by_name": schedule.requested_by_name,
        "revision": schedule.revision,
        "attempts": [
            {
                "started_label": format_utc(a.started_at),
                "finished_at": a.finished_at,
                "code": a.code,
                "http_status": a.http_status,
            }
            for a in schedule.attempts
        ],
    }


def _wall(schedule: Schedule) -> str:
    """The wall time as the editor entered it, with the zone's abbreviation at due_at."""
    abbreviation = local_wall(schedule.due_at, schedule.timezone).rsplit(" ", 1)[-1]
    return f"{schedule.local_time.replace('T', ' ')} {abbreviation}"
