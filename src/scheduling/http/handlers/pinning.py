"""Pin what the editor saw, and pin a stale schedule again in one step.

The create form carries the versions its page showed. At submit the plugin
reads the content again; a schedule is stored only if the version it would
pin is still the one the editor looked at.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.dee_wan import ContentRead
from scheduling.domain.pins import describe_pin, pin_of
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import WAITING, Status
from scheduling.http.pages.wording import explain
from scheduling.http.refusals import Refusal
from scheduling.repository import schedules
from scheduling.services import Services


@dataclass(frozen=True)
class ShownVersions:
    """What the page showed: the current version, and the published one ("" for none)."""

    current: str
    published: str

    def pin(self, kind: str) -> str | None:
        return self.current if kind == "publish" else (self.published or None)


def shown_versions(fields: dict[str, str]) -> ShownVersions:
    """The versions a create form carries; a form without them did not come from the page."""
    current = fields.get("version_id", "").strip()
    published = fields.get("published_version_id", "").strip()
    if not is_id(current) or (published and not is_id(published)):
        raise Refusal(
            400,
            "invalid_request",
            "This form does not say which version it showed. Reload the page and try again.",
        )
    return ShownVersions(current, published)


def changed_since_shown(kind: str, shown: ShownVersions, read: ContentRead) -> str | None:
    """Why the pin would differ from what the page showed, in a sentence; None when it would not."""
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
        "then press Schedule again."
    )


async def repin_form(
    services: Services, installation_id: str, read: ContentRead, fields: dict[str, str]
) -> dict[str, str] | None:
    """For a re-pin (`repin_of`), the old schedule's change, local time, zone and fold as a
    create form would send them; None for an ordinary create."""
    old_id = fields.get("repin_of")
    if old_id is None:
        return None
    old = await schedules.get(services.db, installation_id, old_id) if is_id(old_id) else None
    if old is None:
        raise Refusal(404, "schedule_not_found", "There is no such schedule in this installation.")
    if old.content_id != read.content.primary_id:
        raise Refusal(
            403,
            "other_content",
            "This schedule belongs to other content. Use the Scheduling page in Dee Wan.",
        )
    if old.status == Status.RUNNING:
        raise Refusal(409, "execution_in_progress", explain("execution_in_progress"))
    if old.status not in WAITING:
        raise Refusal(
            409,
            "not_repinnable",
            "Only a schedule that is still waiting can be pinned again; this one has ended or "
            "was replaced since the page was shown. Reload the page to see it.",
        )
    return {
        "transition": f"{old.kind}:{old.to_state}",
        "local_time": old.local_time,
        "timezone": old.timezone,
        "fold": old.fold or "",
    }
