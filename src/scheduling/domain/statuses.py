"""A schedule's statuses, and the groups the runner, the pages and the operator read them in.

    pending ──▶ running ──▶ completed | refused | retrying ──▶ running …
    pending, retrying ──▶ cancelled (a person) | superseded (a newer schedule) | refused (caps)
                      | held (known stale: never sent)
    queued (behind an earlier item of its release) ──▶ pending (its turn) | held | cancelled …

The database stores the values (`schedules.status`, checked by the table). SQL
that must match a partial index's `WHERE` (the runner's due query, the status
view) writes its group as literal text; a test checks that text against the
groups below.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Status(StrEnum):
    PENDING = "pending"  # waiting for its time
    RETRYING = "retrying"  # waiting for its next try
    RUNNING = "running"  # claimed by a runner, under a lease
    COMPLETED = "completed"  # Dee Wan applied the change (or had already)
    REFUSED = "refused"  # ended without the change: refused by Dee Wan, or past a cap
    CANCELLED = "cancelled"  # a person cancelled it
    SUPERSEDED = "superseded"  # a newer schedule for the same content and kind replaced it
    QUEUED = "queued"  # behind an earlier item of its release: not due until that one is done
    HELD = "held"  # ended unsent: known stale, or an earlier item of its release was not done


# Due once their time comes (the runner's due query reads only these).
DUE: tuple[Status, ...] = (Status.PENDING, Status.RETRYING)
# Still to be sent: a person may cancel them, and a new schedule supersedes them.
WAITING: tuple[Status, ...] = (*DUE, Status.QUEUED)
# At most one live schedule per installation + content + kind (index `schedules_one_live`).
LIVE: tuple[Status, ...] = (*WAITING, Status.RUNNING)
# Ended by the runner or a person (a replaced one is counted apart: `SUPERSEDED`).
ENDED: tuple[Status, ...] = (Status.COMPLETED, Status.REFUSED, Status.CANCELLED, Status.HELD)
# Ended without the change: refused (by Dee Wan or a cap), or held unsent. Each needs
# attention until it is settled, and may be tried again.
NOT_DONE: tuple[Status, ...] = (Status.REFUSED, Status.HELD)
# Nothing more happens to these.
FINISHED: tuple[Status, ...] = (
    Status.COMPLETED,
    Status.REFUSED,
    Status.CANCELLED,
    Status.SUPERSEDED,
    Status.HELD,
)


# The groups a person reads a listing in (the manage view's filters); their order is the
# default listing's order.
GROUPS: dict[str, tuple[Status, ...]] = {
    "attention": (Status.RETRYING, Status.REFUSED, Status.HELD),
    "upcoming": (Status.PENDING, Status.QUEUED, Status.RUNNING),
    "finished": (Status.COMPLETED, Status.CANCELLED, Status.SUPERSEDED),
}
# A refused (or held) schedule needs attention until it is settled (a site admin dismissed it, or a
# later schedule of the same content and change was done); then it counts as finished.
SETTLED_GROUP = "finished"


def group_of(status: Status, settled: bool = False, needs_repin: bool = False) -> str:
    """`needs_repin`: a waiting schedule a collision put out of date needs attention."""
    if settled and status in (Status.REFUSED, Status.HELD):
        return SETTLED_GROUP
    if needs_repin and status in (Status.PENDING, Status.QUEUED):
        return "attention"
    return next(name for name, statuses in GROUPS.items() if status in statuses)


def sql_list(statuses: Iterable[Status]) -> str:
    """`('pending', 'retrying')`: a group as SQL text, for statements built from constants."""
    return "(" + ", ".join(f"'{status.value}'" for status in statuses) + ")"
