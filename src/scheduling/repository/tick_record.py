"""The last runner tick's record: written once, when the tick has settled every batch, in a
round trip of its own; read by the status route."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.ports import Database, Row, Statement


@dataclass(frozen=True)
class LastTick:
    at: int
    duration_ms: int
    report: dict[str, int]


def record(db: Database, at: int, duration_ms: int, report: Mapping[str, int]) -> Statement:
    return db.prepare(
        "INSERT INTO runner_last_tick (id, at, duration_ms, report) VALUES (1, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET at = excluded.at, duration_ms = excluded.duration_ms,"
        " report = excluded.report"
    ).bind(at, duration_ms, json.dumps(dict(report), separators=(",", ":"), sort_keys=True))


def read_last(db: Database) -> Statement:
    return db.prepare("SELECT at, duration_ms, report FROM runner_last_tick WHERE id = 1")


def last_from(rows: list[Row]) -> LastTick | None:
    if not rows:
        return None
    row = rows[0]
    return LastTick(int(row["at"]), int(row["duration_ms"]), json.loads(row["report"]))
