"""A schedule's statuses, and the groups the runner, the pages and the operator read them in.

    pending ──▶ running ──▶ completed | refused | retrying ──▶ running …
    pending, retrying ──▶ cancelled (a person) | superseded (a newer schedule) | refused (caps)

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


# Due once their time comes; a person may cancel them, and a new schedule supersedes them.
WAITING: tuple[Status, ...] = (Status.PENDING, Status.RETRYING)
# At most one live schedule per installation + content + kind (index `schedules_one_live`).
LIVE: tuple[Status, ...] = (*WAITING, Status.RUNNING)
# Ended by the runner or a person (a replaced one is counted apart: `SUPERSEDED`).
ENDED: tuple[Status, ...] = (Status.COMPLETED, Status.REFUSED, Status.CANCELLED)
# Nothing more happens to these.
FINISHED: tuple[Status, ...] = (
    Status.COMPLETED,
    Status.REFUSED,
    Status.CANCELLED,
    Status.SUPERSEDED,
)


# The groups a person reads a listing in (the manage view's filters); their order is the
# default listing's order.
GROUPS: dict[str, tuple[Status, ...]] = {
    "attention": (Status.RETRYING, Status.REFUSED),
    "upcoming": (Status.PENDING, Status.RUNNING),
    "finished": (Status.COMPLETED, Status.CANCELLED, Status.SUPERSEDED),
}
# A refused schedule needs attention until it is settled (a site admin dismissed it, or a
# later schedule of the same content and change was done); then it counts as finished.
SETTLED_GROUP = "finished"


def group_of(status: Status, settled: bool = False, needs_repin: bool = False) -> str:
    """`needs_repin`: a pending schedule a collision put out of date needs attention."""
    if settled and status == Status.REFUSED:
        return SETTLED_GROUP
    if needs_repin and status == Status.PENDING:
        return "attention"
    return next(name for name, statuses in GROUPS.items() if status in statuses)


def sql_list(statuses: Iterable[Status]) -> str:
    """`('pending', 'retrying')`: a group as SQL text, for statements built from constants."""
    return "(" + ", ".join(f"'{status.value}'" for status in statuses) + ")"
