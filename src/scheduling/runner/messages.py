"""The queue messages the runner sends its consumers: which schedules to try to claim (a
tick's dispatch), or which notification deliveries to try to send (a settle's hand-off).

    {"v": 1, "at": 1782900000000, "sent": 1782900000000,
     "ids": {"ins_a": ["sch_1", "sch_4"], "ins_b": ["sch_2"]}}
    {"v": 1, "at": 1782900000000, "sent": 1782900000000,
     "deliveries": ["msg_…_whe_…", "msg_…_whe_…"]}

A message never grants anything: a consumer reads the rows it names and claims those that
are due by the same compare-and-set as a tick, so a duplicated, redelivered or late message
finds its rows claimed or settled already and sends nothing. `ids` groups the schedule ids by
installation (a hint that lets a consumer skip an installation whose in-flight cap is full);
`at` is the tick's clock when it dispatched them and `sent` the wall clock then, so a
consumer runs on the tick's clock, as a tick chosen ahead of the wall clock (tests,
`/__scheduled?time=`) runs at that instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from scheduling.domain.claims import DispatchedRow

VERSION = 1
# A message names at most this many schedules (a tick names MAX_ROWS_PER_TICK).
MAX_IDS = 500
MAX_ID_LENGTH = 128
# A consumer runs at most this far ahead of the wall clock, whatever a message says (a tick
# is chosen ahead only in tests and development, by minutes or hours).
MAX_AHEAD_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class Dispatched:
    """A message as a consumer reads it."""

    ids: dict[str, list[str]]  # installation id -> schedule ids
    at: int
    sent: int
    deliveries: list[str] = field(default_factory=list)  # delivery ids (a hand-off's)

    @property
    def ahead_ms(self) -> int:
        """How far the tick's clock ran ahead of the wall clock when it dispatched."""
        return min(MAX_AHEAD_MS, max(0, self.at - self.sent))

    def schedule_ids(self) -> list[str]:
        return [sid for ids in self.ids.values() for sid in ids]


def body(rows: Sequence[DispatchedRow], at: int, sent: int) -> dict[str, Any]:
    ids: dict[str, list[str]] = {}
    for row in rows:
        ids.setdefault(row.installation_id, []).append(row.id)
    return {"v": VERSION, "at": at, "sent": sent, "ids": ids}


def deliveries_body(delivery_ids: Sequence[str], at: int, sent: int) -> dict[str, Any]:
    return {"v": VERSION, "at": at, "sent": sent, "deliveries": list(delivery_ids)}


def parse(value: Any) -> Dispatched | None:
    """The message, or None for anything that is not one (acknowledged and logged, never
    retried: it would fail the same way each time)."""
    if not isinstance(value, dict) or value.get("v") != VERSION:
        return None
    at, sent, ids = value.get("at"), value.get("sent"), value.get("ids")
    if not (_is_ms(at) and _is_ms(sent)):
        return None
    if "deliveries" in value and ids is None:
        named = value["deliveries"]
        if not isinstance(named, list) or len(named) > MAX_IDS:
            return None
        if not all(_is_id(delivery_id) for delivery_id in named):
            return None
        return Dispatched({}, int(at), int(sent), list(named))
    if not isinstance(ids, dict):
        return None
    grouped: dict[str, list[str]] = {}
    count = 0
    for installation, schedule_ids in ids.items():
        if not _is_id(installation) or not isinstance(schedule_ids, list):
            return None
        if not all(_is_id(sid) for sid in schedule_ids):
            return None
        count += len(schedule_ids)
        grouped[installation] = list(schedule_ids)
    if count > MAX_IDS:
        return None
    return Dispatched(grouped, int(at), int(sent))


def _is_ms(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


def _is_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_ID_LENGTH
        and value.isascii()
        and value.isprintable()
    )
