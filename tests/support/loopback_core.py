"""A minimal Dee Wan core on 127.0.0.1 that answers transitions after a delay.

It counts the requests it is working on at once, so a test can show what the
plugin really does to a core: how many requests are in flight together, and
when each arrived. Used against the CPython runtime and the Pyodide harness.
A `reply` function may script the answer (status, headers, raw body bytes,
delay) per request, e.g. to answer gzip or something hostile.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

APPLIED = json.dumps({"code": "transition_applied"}).encode()


@dataclass(frozen=True)
class Reply:
    """One scripted answer: sent as is (the body's bytes are not re-encoded)."""

    status: int = 200
    body: bytes = APPLIED
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    delay_s: float | None = None  # None: the core's delay


# The command's JSON body and its headers (lower-case names) -> the answer.
Script = Callable[[dict[str, Any], dict[str, str]], Reply]


@dataclass
class LoopbackCore:
    delay_s: float = 0.0
    base_url: str = ""
    arrivals: list[float] = field(default_factory=list)  # time.time() of each request
    keys: list[str] = field(default_factory=list)  # Idempotency-Key of each request
    headers: list[dict[str, str]] = field(default_factory=list)  # each request's headers
    in_flight: int = 0
    max_in_flight: int = 0
    # Per installation (read from the key, `sched:<installation>:…`): now, and the most at once.
    in_flight_by: dict[str, int] = field(default_factory=dict)
    max_in_flight_by: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _enter(self, headers: dict[str, str]) -> str:
        key = headers.get("idempotency-key", "")
        installation = key.split(":")[1] if key.count(":") >= 2 else ""
        with self._lock:
            self.arrivals.append(time.time())
            self.keys.append(key)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            now = self.in_flight_by.get(installation, 0) + 1
            self.in_flight_by[installation] = now
            self.max_in_flight_by[installation] = max(
                self.max_in_flight_by.get(installation, 0), now
            )
        return installation

    def _leave(self, installation: str) -> None:
        with self._lock:
            self.in_flight -= 1
            self.in_flight_by[installation] -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops a burst of connections (a 1 s SYN retry); a hundred
    # installations' clocks open six each at once.
    request_queue_size = 1024


@contextmanager
def loopback_core(delay_s: float, reply: Script | None = None) -> Iterator[LoopbackCore]:
    core = LoopbackCore(delay_s)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            installation = core._enter(headers)
            answer = reply(json.loads(raw), headers) if reply is not None else Reply()
            time.sleep(core.delay_s if answer.delay_s is None else answer.delay_s)
            # Before the answer leaves: the client may reuse its slot once it has the headers.
            core._leave(installation)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left

        def log_message(self, *args: Any) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    core.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield core
    finally:
        server.shutdown()
        server.server_close()
