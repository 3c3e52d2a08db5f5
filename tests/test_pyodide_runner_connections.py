"""The runner in the real Worker entry under Pyodide, with the harness holding a seventh
connection back as workerd does: SEND_CONCURRENCY keeps every timeout for a request that has
its connection; sending everything at once (the old behaviour) times requests out while they
wait.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.pyodide_harness.harness import Harness
from tests.support.d1_rows import installation_row, schedule_row
from tests.support.loopback_core import Loopback, loopback_core

pytestmark = pytest.mark.pyodide

ROWS = 20
CORE_SECONDS = 4.0


@pytest.fixture
def core() -> Iterator[Loopback]:
    with loopback_core(CORE_SECONDS) as slow:
        yield slow


def seed(harness: Harness, core: Loopback, installation_id: str, due: int) -> None:
    sealed = harness.seal("dwp_" + "A" * 43, f"installation-token:{installation_id}")
    harness.execute(
        installation_row(installation_id, core.base_url, sealed),
        *(
            schedule_row(f"sch_{installation_id}_{i}", installation_id, f"cnt_{i}", due_at=due)
            for i in range(ROWS)
        ),
    )


def attempts(harness: Harness, installation_id: str) -> list[dict[str, Any]]:
    return harness.sql(
        "SELECT a.code FROM schedule_attempts a JOIN schedules s ON s.id = a.schedule_id"
        " WHERE s.installation_id = ? ORDER BY a.schedule_id",
        installation_id,
    )


def test_twenty_rows_against_a_four_second_core_complete_six_at_a_time(
    harness: Harness, core: Loopback
) -> None:
    now = int(time.time() * 1000)
    seed(harness, core, "ins_cap6", now - 1_000)
    harness.fetch_stats(reset=True)
    harness.scheduled(now)
    assert [a["code"] for a in attempts(harness, "ins_cap6")] == ["transition_applied"] * ROWS
    assert core.max_in_flight == 6
    assert harness.fetch_stats()["max_waiting_for_headers"] == 6
    assert harness.fetch_stats()["aborted_while_queued_total"] == 0


def test_without_slots_the_queued_sends_time_out_as_they_would_in_production(
    harness: Harness, core: Loopback
) -> None:
    """The old behaviour: every send at once, each timer started at fetch()."""
    now = int(time.time() * 1000)
    seed(harness, core, "ins_all_at_once", now - 1_000)
    harness.fetch_stats(reset=True)
    with harness.vars(SEND_CONCURRENCY=ROWS):
        harness.scheduled(now)
    codes = [a["code"] for a in attempts(harness, "ins_all_at_once")]
    # Waves leave at 0 s, 4 s and 8 s; at 10 s the third wave and the queued rest time out.
    assert codes.count("transition_applied") == 12
    assert codes.count("timeout") == ROWS - 12
    stats = harness.fetch_stats()
    assert stats["max_waiting_for_headers"] == 6  # the harness held the rest back, as workerd does
    assert stats["queued_total"] == ROWS - 6
