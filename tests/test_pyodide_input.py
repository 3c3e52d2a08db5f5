"""Issue 17 through the real Worker entry under Pyodide: a chunked body is read only up to the
64 KiB limit (the harness streams the body as workerd does, so the rest stays unread), and a Dee
Wan that answers compressed is read as on CPython. (The input rules both runtimes share are in
tests/test_input_rules.py.)
"""

from __future__ import annotations

import gzip
import json
import socket
import time
from typing import Any

import pytest

from scheduling.domain.secrets import installation_token
from scheduling.ports import OutboundRequest
from tests.pyodide_harness.harness import ADMIN_SECRET, Harness
from tests.support.compressed import CASES, encoded
from tests.support.d1_rows import installation_row, schedule_row
from tests.support.loopback_core import APPLIED, Reply, loopback_core

pytestmark = pytest.mark.pyodide

LIMIT = 64 * 1024
# The operator's mint of an activation code: a POST of a JSON body.
MINT = ("/admin/activation-codes", {"Authorization": f"Bearer {ADMIN_SECRET}"})
# The old entry waited for the whole body; one that never ends was never answered.
ANSWER_WITHIN_S = 30.0


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def chunked_request(worker: Harness, path: str, headers: dict[str, str]) -> socket.socket:
    """A connection that has sent the head of a chunked JSON POST, and no body yet."""
    conn = socket.create_connection(("127.0.0.1", worker.port), timeout=ANSWER_WITHIN_S)
    lines = [f"POST {path} HTTP/1.1", f"Host: localhost:{worker.port}"]
    lines += ["Transfer-Encoding: chunked", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return conn


def read_answer(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one answer with a Content-Length (or chunked)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        assert more, data
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
    if "content-length" in headers:
        while len(rest) < int(headers["content-length"]):
            more = conn.recv(65536)
            assert more
            rest += more
        return int(status_line.split()[1]), headers, rest[: int(headers["content-length"])]
    body = b""
    while True:  # chunked
        while b"\r\n" not in rest:
            rest += conn.recv(65536)
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return int(status_line.split()[1]), headers, body
        while len(rest) < size + 2:
            rest += conn.recv(65536)
        body, rest = body + rest[:size], rest[size + 2 :]


def test_a_chunked_body_over_the_limit_is_refused_without_waiting_for_its_end(
    worker: Harness,
) -> None:
    conn = chunked_request(worker, "/dee-wan/activate", {})
    with conn:
        for _ in range(5):  # 80 KiB in five chunks, and the body never ends
            conn.sendall(chunk(b" " * (16 * 1024)))
        status, _, body = read_answer(conn)
    assert (status, json.loads(body)["code"]) == (400, "invalid_request")
    assert "larger than 65536 bytes" in json.loads(body)["message"]


def test_a_chunked_body_within_the_limit_is_read_whole(worker: Harness) -> None:
    conn = chunked_request(worker, *MINT)
    with conn:
        # An object padded to exactly the limit, in pieces: minted only if all of it was read.
        padding = b" " * (LIMIT - 2)
        for piece in (b"{", padding[: LIMIT // 2], padding[LIMIT // 2 :], b"}"):
            conn.sendall(chunk(piece))
            time.sleep(0.01)
        conn.sendall(b"0\r\n\r\n")
        status, _, body = read_answer(conn)
    assert (status, json.loads(body)["kind"]) == (201, "activate")


def test_the_same_limit_holds_for_a_chunked_body_one_byte_over(worker: Harness) -> None:
    conn = chunked_request(worker, *MINT)
    with conn:
        conn.sendall(chunk(b"{" + b" " * (LIMIT - 1)) + chunk(b"}") + b"0\r\n\r\n")
        status, _, body = read_answer(conn)
    assert (status, json.loads(body)["code"]) == (400, "invalid_request")
    assert worker.sql("SELECT count(*) AS n FROM activation_codes") == [{"n": 0}]


# -- a Dee Wan that answers compressed ----------------------------------------------


def tick_against(worker: Harness, reply: Any) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """One due schedule, one tick of the real entry against a loopback core answering with
    `reply`: the schedule's row, and the headers of each request the core received."""
    token = "dwp_" + "z" * 43
    sealed = worker.seal(token, installation_token("ins_zip"))
    now = int(time.time() * 1000)
    with loopback_core(0.0, reply) as core:
        worker.execute(
            installation_row("ins_zip", core.base_url, sealed),
            schedule_row("sch_zip", "ins_zip", "cnt_zip", due_at=now - 1_000),
        )
        worker.scheduled(now)
    [row] = worker.sql("SELECT status, result_code FROM schedules")
    return row, core.headers


@pytest.mark.parametrize(("name", "answer", "expected"), CASES, ids=[case[0] for case in CASES])
def test_a_compressed_answer_is_read_as_on_cpython(
    worker: Harness, name: str, answer: Reply, expected: tuple[str, str]
) -> None:
    row, sent = tick_against(worker, lambda command, headers: answer)
    assert (row["status"], row["result_code"]) == expected
    assert [headers.get("accept-encoding") for headers in sent] == ["identity"]


def test_a_gzip_bomb_is_read_only_to_the_limit(worker: Harness) -> None:
    bomb = gzip.compress(APPLIED[:-1] + b" " * 200_000_000 + b"}", compresslevel=9)
    with loopback_core(0.0, lambda command, headers: encoded(bomb, "gzip")) as core:
        [outcome] = worker.send_all(
            [OutboundRequest("POST", core.base_url, {}, b"{}", 10.0, LIMIT)]
        )
    assert outcome["truncated"] is True
    assert len(outcome["body"]) == LIMIT
