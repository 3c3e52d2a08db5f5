"""The pin: which version a schedule sends, and whether Dee Wan still reports that version.

Dee Wan refuses a command whose pin or workflow revision is no longer current
(409 `scheduled_target_stale`). The content page reads the content on every
load, so it can say so days before the due minute instead of after it; and a
create pins only what the editor's page showed.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.content import Content, ContentRead
from scheduling.domain.refusals import Refusal
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import WAITING


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
