"""The harness caps outbound fetch as workerd does: six per invocation waiting for headers.

WorkersFetch runs inside Pyodide (through the `/__harness/send` control route)
against a slow loopback server that counts the requests it is answering at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scheduling.ports import OutboundRequest
from tests.pyodide_harness.harness import MAX_CONNECTIONS, Harness

pytestmark = pytest.mark.pyodide

DELAY_S = 0.5


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 would drop a burst of connections under load,
    # delaying them by a SYN retransmit (1 s) and spoiling the concurrency counts.
    request_queue_size = 64


class SlowServer:
    """Answers every GET after `delay_s`; records arrivals and the most it held at once."""

    def __init__(self, delay_s: float = DELAY_S) -> None:
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.current = 0
        self.most = 0
        self.arrivals: dict[str, float] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server.lock:
                    server.arrivals[self.path] = time.monotonic()
                    server.current += 1
                    server.most = max(server.most, server.current)
                time.sleep(server.delay_s)
                with server.lock:
                    # Before the answer leaves: a client slot only frees once headers arrive.
                    server.current -= 1
                body = self.path.encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[SlowServer]:
    slow = SlowServer()
    yield slow
    slow.close()


def get(server: SlowServer, name: str, timeout_s: float = 5.0) -> OutboundRequest:
    return OutboundRequest("GET", f"{server.url}/{name}", {}, timeout_s=timeout_s)


def test_the_harness_caps_connections_at_six_like_workerd(harness: Harness) -> None:
    assert MAX_CONNECTIONS == 6
    assert harness.ready["max_connections"] == 6
    assert harness.fetch_stats()["max_connections"] == 6


def test_a_seventh_fetch_waits_for_a_slot(harness: Harness, server: SlowServer) -> None:
    harness.fetch_stats(reset=True)
    outcomes = harness.send_all([get(server, f"r{i}") for i in range(7)])

    assert [outcome.get("status") for outcome in outcomes] == [200] * 7
    assert [outcome["body"] for outcome in outcomes] == [f"/r{i}" for i in range(7)]
    assert server.most == 6
    # The seventh reached the server only once one of the first six had its answer.
    first_six = [server.arrivals[f"/r{i}"] for i in range(6)]
    assert server.arrivals["/r6"] - min(first_six) >= DELAY_S * 0.95
    assert outcomes[6]["elapsed_ms"] >= 2 * DELAY_S * 1000 * 0.8
    stats = harness.fetch_stats()
    assert stats["max_waiting_for_headers"] == 6
    assert stats["queued_total"] == 1
    assert stats["started_total"] == 7
    assert stats["aborted_while_queued_total"] == 0
    assert (stats["waiting_for_headers"], stats["queued"]) == (0, 0)


def test_a_queued_fetch_times_out_without_reaching_the_server(
    harness: Harness, server: SlowServer
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
    assert "/late" not in server.arrivals
    assert server.most == 6
    stats = harness.fetch_stats()
    assert (stats["queued_total"], stats["aborted_while_queued_total"]) == (1, 1)
    assert stats["started_total"] == 6


def test_the_cap_is_per_invocation(harness: Harness, server: SlowServer) -> None:
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
    assert server.most == 12, sorted(server.arrivals.items(), key=lambda item: item[1])
    stats = harness.fetch_stats()
    assert (stats["max_waiting_for_headers"], stats["queued_total"]) == (6, 0)
