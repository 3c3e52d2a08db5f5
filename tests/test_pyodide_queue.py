"""The queue fan-out through the real Worker entry under Pyodide: with `SEND_QUEUE` bound (the
harness's stand-in, named as workerd's `WorkerQueue`), `scheduled()` dispatches and the
harness delivers the messages to the entry's `queue()` as separate invocations, each with its
own six connections and its own D1 and subrequest allowances; and the platform's limits,
refused with workerd's texts, are not failures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from tests.pyodide_harness.harness import Harness
from tests.support.d1_rows import due_soon, installation_row, removal, schedule_row
from tests.support.loopback_core import LoopbackCore, loopback_core

pytestmark = pytest.mark.pyodide


@pytest.fixture
def core() -> Iterator[LoopbackCore]:
    with loopback_core(0.02) as answering:
        yield answering


def seed(
    harness: Harness, core: LoopbackCore, prefix: str, installations: int, rows: int, due: int
) -> None:
    for n in range(installations):
        installation = f"{prefix}_ins{n}"
        sealed = harness.seal("dwp_" + "A" * 43, f"installation-token:{installation}")
        harness.execute(installation_row(installation, core.base_url, sealed))
        statements = [
            schedule_row(f"{prefix}_s{n}_{i}", installation, f"cnt_{i}", due_at=due)
            for i in range(rows)
        ]
        for start in range(0, rows, 50):
            harness.execute(*statements[start : start + 50])


def remove(harness: Harness, prefix: str) -> None:
    harness.execute(*removal(prefix))


def statuses(harness: Harness, prefix: str) -> dict[str, int]:
    rows = harness.sql(
        "SELECT status || ':' || coalesce(result_code, '') AS k, count(*) AS n FROM schedules"
        " WHERE id LIKE ? GROUP BY k",
        f"{prefix}_%",
    )
    return {r["k"]: r["n"] for r in rows}


def test_scheduled_dispatches_and_queue_invocations_send_within_their_caps(
    harness: Harness, core: LoopbackCore
) -> None:
    prefix = "tq1"
    # Answers slow enough that invocations running at once have requests out at once (at
    # 20 ms, two invocations' sends could interleave without ever overlapping: flaky).
    core.delay_s = 0.2
    due = due_soon()
    seed(harness, core, prefix, installations=4, rows=30, due=due)
    logged = len(harness.events("runner_consume"))
    harness.fetch_stats(reset=True)
    try:
        with (
            harness.vars(
                ENVIRONMENT="development",
                DEE_WAN_DEV_ORIGINS=core.base_url,
                MAX_IN_FLIGHT_PER_INSTALLATION=3,
            ),
            harness.bound_queue(
                max_batch_size=2, max_concurrency=4, delay_scale=0.05, duplicate_every=3
            ),
        ):
            harness.scheduled(due)  # answered once the dispatched work is done too
            queue = harness.queue()
        assert statuses(harness, prefix) == {"completed:transition_applied": 120}
    finally:
        remove(harness, prefix)
    ours = [key for key in core.keys if key.startswith(f"sched:{prefix}_")]
    assert len(ours) == 120
    assert set(Counter(ours).values()) == {1}
    # Several consumer invocations ran at once, each within six connections, and no
    # installation's Dee Wan ever had more than its cap of requests.
    assert queue["max_concurrent"] > 1
    stats = harness.fetch_stats()
    assert stats["max_waiting_for_headers"] <= 6
    assert stats["max_waiting_for_headers_total"] > 6
    assert max(n for i, n in core.max_in_flight_by.items() if i.startswith(prefix)) == 3
    assert queue["sent"] == 6
    assert queue["dead_letters"] == []
    consumed = harness.events("runner_consume")[logged:]
    assert sum(line["sends"] for line in consumed) == 120
    assert sum(line["acked"] for line in consumed) == queue["acked"]


def test_at_workers_free_limits_a_1000_row_burst_drains_over_later_invocations(
    harness: Harness, core: LoopbackCore
) -> None:
    """D1 and fetch refuse past 50 calls in each invocation, with workerd's texts; the
    operator never set the 50s."""
    prefix = "tq2"
    due = due_soon()
    seed(harness, core, prefix, installations=10, rows=100, due=due)
    ticks = len(harness.events("runner_tick_failed"))
    logged = len(harness.events("runner_consume"))
    try:
        with (
            harness.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url),
            harness.bound_queue(max_batch_size=10, max_concurrency=4, delay_scale=0.05),
            harness.limits(d1=50, subrequests=50),
        ):
            harness.scheduled(due, timeout_s=300)
            queue = harness.queue()
        ended = statuses(harness, prefix)
    finally:
        remove(harness, prefix)
    assert len(harness.events("runner_tick_failed")) == ticks  # no failed tick
    consumed = harness.events("runner_consume")[logged:]
    # Nothing lost; a claim whose settle D1 refused was sent again with its key (replayed).
    replayed = ended.pop("completed:idempotent_replay", 0)
    assert ended == {"completed:transition_applied": 1000 - replayed}
    assert replayed <= sum(line["unsettled"] for line in consumed)
    assert sum(line["platform_limit"] for line in consumed) >= 1
    assert sum(line["handed_back"] for line in consumed) > 0
    assert all(i["d1"] <= 50 and i["subrequests"] <= 50 for i in queue["invocations"])
    assert len(queue["invocations"]) >= 1000 // 50
    assert queue["dead_letters"] == []
