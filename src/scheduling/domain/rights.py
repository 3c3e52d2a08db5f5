"""What the person who opened a page may do with a schedule.

Dee Wan decides: a content read lists the `(kind, to)` changes the delegated
person may make to that content. The plugin keeps that list with the session
when the page is shown, and both the Cancel button and a posted cancel judge
by it, so a cancel never calls Dee Wan. A manage launch is the installation's
overview and may cancel any schedule (docs/reference/semantics.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduling.domain.content import ContentRead
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import NOT_DONE, WAITING

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
