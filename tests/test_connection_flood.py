"""A flood of slow connections (issue 26, item 5) against the real `serve`: with 1,500 half-sent
heads it hit its open-file limit, an honest request waited 9.8 s and the log grew 18.6 MB in
12 s (41,993 identical tracebacks of `socket.accept() out of system resource`).

Here `serve` runs with an open-file limit of 512 and gets 1,000 heads that never end: its
connections stay below the limit, an honest request is answered at once, and the log says
what happened once, with a count. (The same run before the cap: the honest request waited
for the heads' 10 s deadline and the log had thousands of tracebacks.)

Issue 37: under load it failed once with asyncio's "socket.accept() out of system resource"
traceback. The cap left room for one burst of accepts, but asyncio has up to four bursts
open before the cap closes anything for the first (accept, transport, `connection_made`,
close: one turn of its loop each); measured, the server's open files reached the limit of
512 in one run of three. The cap now leaves room for them, and the test watches the
server's open files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from scheduling.limits import VISITOR_CONNECTIONS
from scheduling.runtimes.cpython.repeated_logs import OncePerInterval
from scheduling.runtimes.cpython.startup import (
    BASE_FILES,
    BURSTS_IN_FLIGHT,
    OUTBOUND_CONNECTIONS,
    Connections,
)
from tests.support.app import ADMIN_SECRET, TOKEN_KEY
from tests.support.serve_process import free_port, start_serve, wait_until_up, write_vars

HEADS = 1_000
OPEN_FILES = 512


def test_a_thousand_half_sent_heads_neither_exhaust_files_nor_hold_an_honest_request(
    tmp_path: Path,
) -> None:
    port = free_port()
    vars_file = write_vars(
        tmp_path / "vars",
        PUBLIC_ORIGIN=f"http://localhost:{port}",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )
    process = start_serve(
        tmp_path / "p.sqlite3", vars_file, port, "--no-cron", open_files=OPEN_FILES
    )
    heads: list[socket.socket] = []
    most_open = [0]
    watching = threading.Event()
    watching.set()

    def watch_open_files() -> None:
        while watching.is_set():
            with contextlib.suppress(OSError):
                most_open[0] = max(most_open[0], len(os.listdir(f"/proc/{process.pid}/fd")))

    watcher = threading.Thread(target=watch_open_files, daemon=True)
    try:
        wait_until_up(port, process)
        watcher.start()
        for _ in range(HEADS):
            head = socket.create_connection(("127.0.0.1", port), timeout=5)
            head.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            heads.append(head)
        started = time.monotonic()
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
        waited = time.monotonic() - started
        assert answer.status_code == 200
        assert waited < 3, f"an honest request waited {waited:.1f} s"
    finally:
        watching.clear()
        for head in heads:
            head.close()
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output[-2000:]
    assert "Traceback" not in output
    assert "Too many open files" not in output
    lines = output.splitlines()
    assert len(lines) < 20, output[-3000:]
    cap_lines = [line for line in lines if "connections: at the cap of" in line]
    assert cap_lines, output[-3000:]
    assert "more like it" in cap_lines[-1], output[-3000:]
    if Path("/proc").is_dir():
        assert most_open[0] < OPEN_FILES - BASE_FILES // 2, most_open[0]


@pytest.mark.parametrize("file_limit", [256, 512, 1024, 4096, 1 << 20])
def test_the_cap_leaves_room_for_every_burst_of_accepts_in_flight(file_limit: int) -> None:
    connections = Connections.within(file_limit)
    outbound = OUTBOUND_CONNECTIONS + VISITOR_CONNECTIONS
    in_flight = BURSTS_IN_FLIGHT * connections.accept_burst
    assert BASE_FILES + outbound + connections.cap + in_flight <= file_limit
    assert BURSTS_IN_FLIGHT >= 4  # accept, transport, connection_made, close


def test_a_repeated_failure_is_written_once_per_interval_with_a_count() -> None:
    now = [0.0]
    once = OncePerInterval(interval_s=10, clock=lambda: now[0])
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("scheduling.test_repeated")
    handler = Keep()
    handler.addFilter(once)
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        for second in range(25):
            now[0] = float(second)
            for _ in range(1_000):
                logger.error("socket.accept() out of system resource")
            logger.warning("bad head from %s", "203.0.113.7")
            logger.info("a tick ran")  # no failure: always written
        now[0] = 40.0
        once.flush()
    finally:
        logger.removeHandler(handler)
    accept = [r for r in records if r.startswith("socket.accept()")]
    assert accept == [
        "socket.accept() out of system resource",
        "socket.accept() out of system resource (9999 more like it in the last 10 s, not written)",
        "socket.accept() out of system resource (9999 more like it in the last 10 s, not written)",
        "socket.accept() out of system resource (4999 more like it in the last 20 s, not written)",
    ]
    assert len([r for r in records if r.startswith("bad head")]) == 4
    assert records.count("a tick ran") == 25
