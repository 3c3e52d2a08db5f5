"""The pin: which version a schedule sends, and whether Dee Wan still reports that version.

Dee Wan refuses a command whose pin or workflow revision is no longer current
(409 `scheduled_target_stale`). The content page reads the content on every
load, so it can say so days before the due minute instead of after it.
"""

from __future__ import annotations

from scheduling.dee_wan import Content, ContentRead
from scheduling.domain.statuses import WAITING
from scheduling.repository.schedules import Schedule


def pin_of(kind: str, content: Content) -> str | None:
    """Publish pins the current version; unpublish pins the published one (None: nothing is)."""
    return content.current_version_id if kind == "publish" else content.published_version_id


def describe_pin(kind: str, version: str | None) -> str:
    """`the current version is ver_13`, `the published version is ver_9`, `nothing is published`."""
    if kind == "publish":
        return f"the current version is {version}"
    return f"the published version is {version}" if version else "nothing is published"


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
