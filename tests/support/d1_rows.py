"""Rows written straight into the Worker's D1 (through the Pyodide harness), for runner tests."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

HOUR = 3_600_000
MINUTE = 60_000
DAY = 24 * HOUR


def due_soon() -> int:
    """A whole minute five to six minutes ahead of the real clock. The Worker's tick runs at
    the later of `scheduledTime` and the wall clock, so a tick chosen in the future runs at
    exactly that instant, while one chosen in the past would run now (a late delivery); and
    a tick refuses a `scheduledTime` more than 15 minutes ahead (`runner/tick.py`).
    Each test takes its own when it starts: a run of the suite lasts longer than that."""
    return (int(time.time() * 1000) // MINUTE + 6) * MINUTE


def _a_day_ago() -> int:
    return int(time.time() * 1000) - DAY


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def installation_row(
    installation_id: str, base_url: str, token_sealed: str
) -> tuple[str, list[Any]]:
    return (
        "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
        " token_rotated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [installation_id, "site_1", base_url, token_sealed, _a_day_ago(), _a_day_ago()],
    )


def schedule_row(
    schedule_id: str,
    installation_id: str,
    content_id: str,
    *,
    due_at: int,
    kind: str = "publish",
    version_id: str = "ver_2",
    revision: int = 1,
) -> tuple[str, list[Any]]:
    values = {
        "id": schedule_id,
        "installation_id": installation_id,
        "content_id": content_id,
        "kind": kind,
        "to_state": "published" if kind == "publish" else "draft",
        "version_id": version_id,
        "workflow_revision": 3,
        "revision": revision,
        "idempotency_key": f"sched:{installation_id}:{schedule_id}:r{revision}",
        "due_at": due_at,
        "timezone": "UTC",
        "local_time": rfc3339(due_at)[:16],
        "status": "pending",
        "attempt_count": 0,
        "next_attempt_at": due_at,
        "requested_by": "usr_editor",
        "requested_by_name": "Ada",
        "created_at": due_at - 3_600_000,
        "updated_at": due_at - 3_600_000,
    }
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    return f"INSERT INTO schedules ({columns}) VALUES ({marks})", list(values.values())


def removal(prefix: str) -> list[tuple[str, list[Any]]]:
    """The statements that remove what a test wrote under ids starting `<prefix>_` (the shared
    harness's database lives for the whole session)."""
    like = f"{prefix}_%"
    return [
        ("DELETE FROM schedule_attempts WHERE schedule_id LIKE ?", [like]),
        ("DELETE FROM webhook_deliveries WHERE schedule_id LIKE ?", [like]),
        ("DELETE FROM schedules WHERE id LIKE ?", [like]),
        ("DELETE FROM installations WHERE id LIKE ?", [like]),
    ]
