"""A Dee Wan core on loopback for the benchmarks, in its own process: an asyncio HTTP/1.1 server
answering every transition `transition_applied` after a delay, keeping connections alive.

In the plugin's own process (tests/support/loopback_core.py, a thread per connection) a
burst of 600 requests at once competes with the plugin for one interpreter; here the core
costs the plugin nothing but the machine's other CPU. It counts what the plugin did to it:
the requests in flight at once, in all and per installation (read from the Idempotency-Key,
`sched:<installation>:…`), and every key it was sent, read back from `GET /__stats`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

APPLIED = json.dumps({"code": "transition_applied"}).encode()


class _Counts:
    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.by: Counter[str] = Counter()
        self.max_by: dict[str, int] = {}
        self.keys: Counter[str] = Counter()

    def enter(self, key: str) -> str:
        installation = key.split(":")[1] if key.count(":") >= 2 else ""
        self.keys[key] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.by[installation] += 1
        self.max_by[installation] = max(self.max_by.get(installation, 0), self.by[installation])
        return installation

    def leave(self, installation: str) -> None:
        self.in_flight -= 1
        self.by[installation] -= 1

    def as_json(self) -> bytes:
        seen = {"max_in_flight": self.max_in_flight, "max_in_flight_by": self.max_by}
        return json.dumps({**seen, "keys": self.keys}).encode()


async def _serve(delay_s: float) -> None:
    counts = _Counts()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                await reader.readexactly(int(headers.get("content-length", "0")))
                if path == "/__stats":
                    body = counts.as_json()
                else:
                    installation = counts.enter(headers.get("idempotency-key", ""))
                    await asyncio.sleep(delay_s)
                    counts.leave(installation)
                    body = APPLIED
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


@dataclass
class CoreProcess:
    base_url: str

    def stats(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(f"{self.base_url}/__stats", timeout=30).json()
        return answer


@contextmanager
def core_process(delay_s: float) -> Iterator[CoreProcess]:
    """`python -m bench.core_process DELAY_S`, from the repository root, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.core_process", str(delay_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port:
            raise RuntimeError("the core process did not start")
        yield CoreProcess(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    asyncio.run(_serve(float(sys.argv[1])))
