"""The harness caps outbound fetch as workerd does: six per invocation waiting for headers;
and a tick's fetch gives up on a core that does not answer in ten seconds.

WorkersFetch runs inside Pyodide (through the `/__harness/send` control route)
against a slow loopback server that counts the requests it is answering at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from scheduling.ports import OutboundRequest
from tests.pyodide_harness.harness import MAX_CONNECTIONS, Harness
from tests.support.d1_rows import due_soon, installation_row, schedule_row
from tests.support.loopback_core import Loopback, Reply, serve

pytestmark = pytest.mark.pyodide

DELAY_S = 0.5


@pytest.fixture
def server() -> Iterator[Loopback]:
    """Answers every GET with its path after `delay_s`; records arrivals and the most it held
    at once."""
    with serve(lambda request: Reply(200, request.url.encode(), ()), delay_s=DELAY_S) as slow:
        yield slow


def arrivals(server: Loopback) -> dict[str, float]:
    return {request.url: request.at for request in server.received}


def get(server: Loopback, name: str, timeout_s: float = 5.0) -> OutboundRequest:
    return OutboundRequest("GET", f"{server.base_url}/{name}", {}, timeout_s=timeout_s)


def test_the_harness_caps_connections_at_six_like_workerd(harness: Harness) -> None:
    assert MAX_CONNECTIONS == 6
    assert harness.ready["max_connections"] == 6
    assert harness.fetch_stats()["max_connections"] == 6


def test_a_seventh_fetch_waits_for_a_slot(harness: Harness, server: Loopback) -> None:
    harness.fetch_stats(reset=True)
    outcomes = harness.send_all([get(server, f"r{i}") for i in range(7)])

    assert [outcome.get("status") for outcome in outcomes] == [200] * 7
    assert [outcome["body"] for outcome in outcomes] == [f"/r{i}" for i in range(7)]
    assert server.max_in_flight == 6
    # The seventh reached the server only once one of the first six had its answer.
    first_six = [arrivals(server)[f"/r{i}"] for i in range(6)]
    assert arrivals(server)["/r6"] - min(first_six) >= DELAY_S * 0.95
    assert outcomes[6]["elapsed_ms"] >= 2 * DELAY_S * 1000 * 0.8
    stats = harness.fetch_stats()
    assert stats["max_waiting_for_headers"] == 6
    assert stats["queued_total"] == 1
    assert stats["started_total"] == 7
    assert stats["aborted_while_queued_total"] == 0
    assert (stats["waiting_for_headers"], stats["queued"]) == (0, 0)


def test_a_queued_fetch_times_out_without_reaching_the_server(
    harness: Harness, server: Loopback
) -> None:
    server.delay_s = 1.0
    harness.fetch_stats(reset=True)
    requests = [get(server, f"busy{i}") for i in range(6)]
    requests.append(get(server, "late", timeout_s=0.3))  # its timer runs while it waits
    outcomes = harness.send_all(requests)

    assert [outcome.get("status") for outcome in outcomes[:6]] == [200] * 6
    assert outcomes[6]["error"] == "TransportTimeout"
    # Rejected with AbortSignal.timeout's reason, a DOMException named TimeoutError, as fetch does.
    assert outcomes[6]["detail"] == "TimeoutError"
    assert 250 <= outcomes[6]["elapsed_ms"] < 1000  # before any slot came free
    assert "/late" not in arrivals(server)
    assert server.max_in_flight == 6
    stats = harness.fetch_stats()
    assert (stats["queued_total"], stats["aborted_while_queued_total"]) == (1, 1)
    assert stats["started_total"] == 6


def test_the_cap_is_per_invocation(harness: Harness, server: Loopback) -> None:
    """Two invocations at once each get six connections, as two requests to a Worker do."""
    server.delay_s = 1.0  # so that the two invocations surely overlap
    harness.fetch_stats(reset=True)
    results: list[list[dict[str, object]]] = []

    def invocation(tag: str) -> None:
        results.append(harness.send_all([get(server, f"{tag}{i}") for i in range(6)]))

    threads = [threading.Thread(target=invocation, args=(tag,)) for tag in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert [outcome["status"] for batch in results for outcome in batch] == [200] * 12
    assert server.max_in_flight == 12, sorted(arrivals(server).items(), key=lambda item: item[1])
    stats = harness.fetch_stats()
    assert (stats["max_waiting_for_headers"], stats["queued_total"]) == (6, 0)


def test_a_tick_gives_up_on_a_silent_core_after_ten_seconds(worker: Harness) -> None:
    """WorkersFetch's AbortSignal.timeout fires and maps to TransportTimeout (code `timeout`)."""
    with serve(lambda _: Reply(delay_s=12.0)) as silent:
        due = due_soon()
        sealed = worker.seal("dwp_" + "s" * 43, "installation-token:ins_silent")
        worker.execute(
            installation_row("ins_silent", silent.base_url, sealed),
            schedule_row("sch_silent", "ins_silent", "cnt_silent", due_at=due),
        )
        started = time.monotonic()
        worker.scheduled(due + 1_000)
        assert 9.5 <= time.monotonic() - started < 12.0
    rows = worker.sql(
        "SELECT s.status, a.code, a.http_status, a.finished_at - a.started_at AS took"
        " FROM schedules s JOIN schedule_attempts a ON a.schedule_id = s.id"
    )
    assert len(rows) == 1
    assert (rows[0]["status"], rows[0]["code"], rows[0]["http_status"]) == (
        "retrying",
        "timeout",
        None,
    )
    assert rows[0]["took"] >= 10_000  # finished = the tick's instant advanced by real time
