"""What the person who opened a page may do with a schedule.

Dee Wan decides: the content read lists the `(kind, to)` changes the
delegated person may make now. A manage launch is the installation's
overview and may cancel any schedule (the README's schedule semantics).
"""

from __future__ import annotations

from scheduling.dee_wan import ContentRead
from scheduling.domain.statuses import WAITING
from scheduling.repository.schedules import Schedule


def offers(read: ContentRead, kind: str, to: str) -> bool:
    return any(t.kind == kind and t.to == to for t in read.workflow.transitions)


def may_cancel(context_kind: str, read: ContentRead | None, schedule: Schedule) -> bool:
    """Cancel needs a waiting schedule and, from a content launch, that change offered now."""
    if schedule.status not in WAITING:
        return False
    if context_kind == "manage":
        return True
    return read is not None and offers(read, schedule.kind, schedule.to_state)
