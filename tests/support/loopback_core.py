"""A real HTTP server on 127.0.0.1, for what needs a socket: the local runtime's client, the
Worker's fetch under Pyodide, a server process.

`serve(handler)` is the one implementation: each request is recorded as it arrives (its
target, headers, body and time) and answered with the `Reply` the handler makes of it, after
the reply's delay. It counts the requests it is answering at once, in all and per
installation (read from the Idempotency-Key), so a test can show what the plugin really does
to a core. `loopback_core` is a Dee Wan answering transition commands, `loopback_receiver` an
endpoint for webhooks and chat messages.
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
JSON = (("content-type", "application/json"),)


@dataclass(frozen=True)
class Received:
    """A request as it arrived: on loopback its target (path and query), in-process its URL."""

    url: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float = 0.0  # when it arrived: time.time() on loopback, in-process a test clock's ms
    method: str = "POST"

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def event(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass(frozen=True)
class Reply:
    """One answer, sent as is (the body's bytes are not re-encoded)."""

    status: int = 200
    body: bytes = APPLIED
    headers: tuple[tuple[str, str], ...] = JSON
    delay_s: float | None = None  # None: the server's `delay_s`


@dataclass
class Loopback:
    url: str = ""  # where the plugin is told to send
    base_url: str = ""  # http://127.0.0.1:port
    delay_s: float = 0.0
    received: list[Received] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    in_flight_by: dict[str, int] = field(default_factory=dict)
    max_in_flight_by: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def keys(self) -> list[str]:
        """The Idempotency-Key of each request, in the order they arrived."""
        return [r.headers.get("idempotency-key", "") for r in self.received]

    @property
    def headers(self) -> list[dict[str, str]]:
        return [r.headers for r in self.received]

    def _enter(self, request: Received) -> str:
        key = request.headers.get("idempotency-key", "")
        installation = key.split(":")[1] if key.count(":") >= 2 else ""
        with self._lock:
            self.received.append(request)
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


LoopbackCore = Loopback  # as the tests of the local runtime's processes name it
Handler = Callable[[Received], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops a burst of connections (a 1 s SYN retry); a hundred
    # installations' clocks open six each at once.
    request_queue_size = 1024


@contextmanager
def serve(handler: Handler, *, path: str = "", delay_s: float = 0.0) -> Iterator[Loopback]:
    """The server for the `with` block; its `url` is its origin and `path`."""
    server = Loopback(delay_s=delay_s)

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Received(self.path, headers, body, time.time(), self.command)
            installation = server._enter(request)
            reply = handler(request)
            time.sleep(server.delay_s if reply.delay_s is None else reply.delay_s)
            # Before the answer leaves: the client may reuse its slot once it has the headers.
            server._leave(installation)
            try:
                self.send_response(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left

        do_GET = do_POST

        def log_message(self, *args: Any) -> None:
            pass

    running = _Server(("127.0.0.1", 0), Answer)
    server.base_url = f"http://127.0.0.1:{running.server_address[1]}"
    server.url = server.base_url + path
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        running.shutdown()
        running.server_close()


# The command's JSON body and its headers (lower-case names) -> the answer.
Script = Callable[[dict[str, Any], dict[str, str]], Reply]


@contextmanager
def loopback_core(delay_s: float, reply: Script | None = None) -> Iterator[Loopback]:
    """A Dee Wan answering each transition command after `delay_s`: applied, or what `reply`
    makes of it (gzip, something hostile, another delay)."""

    def answer(request: Received) -> Reply:
        return reply(json.loads(request.body), request.headers) if reply else Reply()

    with serve(answer, delay_s=delay_s) as core:
        yield core


@contextmanager
def loopback_receiver(delay_s: float = 0.0) -> Iterator[Loopback]:
    """A webhook or chat endpoint at `/hooks`, answering 204 after `delay_s`."""
    with serve(lambda _: Reply(204, b"", ()), path="/hooks", delay_s=delay_s) as receiver:
        yield receiver
