"""Issue 21 through the real Worker entry under Pyodide (Miniflare's D1, migrations applied by
wrangler): the tick's history row and totals in its last write, a failed tick's row,
/healthz and /admin/metrics (parsed with prometheus_client). The /admin page's rules over
plain HTTP: tests/test_operator_page.py; a tick far from the wall clock refused:
tests/test_runner.py; both on both runtimes."""

from __future__ import annotations

import time

import pytest

from scheduling.domain.secrets import installation_token
from tests.pyodide_harness.harness import ADMIN_SECRET, Harness
from tests.support.d1_rows import due_soon, installation_row, schedule_row
from tests.support.metrics import CONTENT_TYPE, parse, value

pytestmark = pytest.mark.pyodide

OPERATOR = {"authorization": f"Bearer {ADMIN_SECRET}"}
HOUR = 3_600_000


def test_a_tick_records_its_row_and_its_totals_in_its_last_write(worker: Harness) -> None:
    due = due_soon()
    worker.scheduled(due)
    [row] = worker.sql("SELECT * FROM tick_history")
    assert (row["at"], row["kind"], row["error"], row["backlog"]) == (due, "tick", None, 0)
    # The due query, the retention purge's step (which finds nothing), then one round trip
    # with the history row, the totals and the pruning.
    assert (row["d1_statements"], row["d1_round_trips"]) == (10, 3)
    assert worker.sql("SELECT name, value FROM runner_totals") == [
        {"name": "ticks:tick", "value": 1}
    ]
    worker.scheduled(due + 60_000)
    assert worker.sql("SELECT value FROM runner_totals WHERE name = 'ticks:tick'") == [{"value": 2}]


def test_healthz_and_metrics_follow_a_refusal_past_the_cap(worker: Harness) -> None:
    now = int(time.time() * 1000)
    sealed = worker.seal("dwp_" + "t" * 43, installation_token("ins_1"))
    long_ago = (now // HOUR - 2) * HOUR  # due two hours ago: past the 15-minute cap
    worker.execute(
        installation_row("ins_1", "https://cms.example", sealed),
        schedule_row("sch_1", "ins_1", "cnt_1", due_at=long_ago),
    )
    with worker.client() as client:
        stalled = client.get("/healthz")
        assert (stalled.status_code, stalled.json()) == (503, {"status": "stalled"})
        assert stalled.headers["cache-control"] == "no-store"
        worker.scheduled(now)  # refused unsent: nothing is sent past the cap
        ok = client.get("/healthz")
        assert (ok.status_code, ok.json()) == (200, {"status": "ok"})

        assert client.get("/admin/metrics").status_code == 401
        metrics = client.get("/admin/metrics", headers=OPERATOR)
    assert metrics.status_code == 200
    assert metrics.headers["content-type"] == CONTENT_TYPE
    _, samples = parse(metrics.text)
    assert value(samples, "scheduling_ticks_total", kind="tick") == 1
    assert value(samples, "scheduling_refusals_total", code="retry_exhausted") == 1
    assert value(samples, "scheduling_refused_unsent_total", reason="other") == 1
    assert value(samples, "scheduling_due_backlog") == 0
    assert value(samples, "scheduling_stalled") == 0
    [row] = worker.sql("SELECT refused_unsent, sends FROM tick_history")
    assert row == {"refused_unsent": 1, "sends": 0}


def test_a_failed_tick_records_its_row_with_the_exception_type(worker: Harness) -> None:
    due = due_soon()
    # Dropped and made again from its own SQL, not renamed: a rename rewrites the schema text
    # of the tables that refer to it, which tests/test_store_contract.py compares.
    made = worker.sql("SELECT sql FROM sqlite_master WHERE tbl_name = 'installations'")
    worker.execute(("DROP TABLE installations", []))
    try:
        with pytest.raises(AssertionError):  # the harness answers the failed invocation 500
            worker.scheduled(due)
    finally:
        worker.execute(*((r["sql"], []) for r in made if r["sql"]))
    [row] = worker.sql("SELECT at, kind, error FROM tick_history")
    assert (row["at"], row["kind"]) == (due, "tick")
    assert row["error"] == "DatabaseError"
    totals = {r["name"]: r["value"] for r in worker.sql("SELECT * FROM runner_totals")}
    assert totals == {"ticks:tick": 1, "ticks_failed:tick": 1}
    with worker.client() as client:
        status = client.get("/admin/status", headers=OPERATOR).json()
    assert status["last_tick"] is None  # a failed tick does not say the runner is alive
