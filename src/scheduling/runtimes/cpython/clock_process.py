"""One clock process of `serve --clock-processes N`: the alarm clocks of the installations it
owns (`clock_processes.owner_of`), on the same SQLite file as `serve`, as a Worker has one
isolate per installation's clock rather than one interpreter for them all.

It speaks JSON lines with `serve` (`clock_processes.py`), on its standard input and output:

- in, first: `{"env": {...}}`, the variables `serve` runs with (never on the command line,
  where any user's `ps` would show the secrets);
- out, once it has armed its installations from D1: `{"ready": <how many>}`;
- in: `{"id": n, "arm": "<installation>", "at": <epoch ms>}`, a clock to tell;
- out: `{"id": n, "moved": true|false}`, or `{"id": n, "unavailable": "<why>"}`.

It stops when its input ends: when `serve` stops, and when `serve` is killed (even with
SIGKILL, the pipe closes with it). Its log lines go to its standard error, `serve`'s own.

    python -m scheduling.runtimes.cpython.clock_process --db PATH --index I --count N
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from scheduling import events
from scheduling.app import App
from scheduling.config import Configuration
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.clock_processes import owner_of
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.http_client import HttpxClient
from scheduling.runtimes.cpython.local_clocks import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.services import Services, log

# The longest line `serve` sends: the variables, a few kilobytes.
MAX_LINE_BYTES = 1024 * 1024


class Answers:
    """Lines to `serve`, on a copy of standard output: standard output itself then points
    at standard error, so a stray print cannot break a line of the conversation."""

    def __init__(self) -> None:
        self._fd = os.dup(1)
        os.dup2(2, 1)

    def say(self, message: Mapping[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        while data:  # a short line to a pipe `serve` keeps reading: written at once
            data = data[os.write(self._fd, data) :]


async def run(db_path: str, index: int, count: int, answers: Answers) -> None:
    loop = asyncio.get_running_loop()
    lines = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), sys.stdin)
    first = await lines.readline()
    if not first:
        return  # `serve` ended before it said anything
    env = json.loads(first)["env"]
    stopping = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)
    db = SqliteDatabase(db_path)
    http = HttpxClient()
    services = Services(
        config=Configuration.from_mapping(env),
        db=db,
        http=http,
        clock=SystemClock(),
        make_crypto=CpythonCrypto,
    )
    clocks = LocalClocks(App(services))
    services.clocks = clocks
    telling: set[asyncio.Task[None]] = set()
    try:
        armed = await clocks.start(owns=lambda installation: owner_of(installation, count) == index)
        log.info("clock process %d of %d: %d installation(s) armed from D1", index, count, armed)
        answers.say({"ready": armed})
        reading = asyncio.create_task(_read(lines, clocks, answers, telling))
        stopped = asyncio.create_task(stopping.wait())
        await asyncio.wait((reading, stopped), return_when=asyncio.FIRST_COMPLETED)
        for task in (reading, stopped, *telling):
            task.cancel()
        await asyncio.gather(reading, stopped, *telling, return_exceptions=True)
    finally:
        await clocks.stop()
        await http.aclose()
        db.close()


async def _read(
    lines: asyncio.StreamReader,
    clocks: LocalClocks,
    answers: Answers,
    telling: set[asyncio.Task[None]],
) -> None:
    """Until `serve`'s end of the pipe closes: each clock told in its own task, as each call
    to a Durable Object is its own."""
    while line := await lines.readline():
        message = json.loads(line)
        task = asyncio.create_task(_tell(clocks, answers, message))
        telling.add(task)
        task.add_done_callback(telling.discard)


async def _tell(clocks: LocalClocks, answers: Answers, message: Mapping[str, Any]) -> None:
    try:
        moved = await clocks.arm(str(message["arm"]), int(message["at"]))
    except Exception as exc:
        answers.say({"id": message["id"], "unavailable": type(exc).__name__})
    else:
        answers.say({"id": message["id"], "moved": moved})


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m scheduling.runtimes.cpython.clock_process")
    cli.add_argument("--db", required=True)
    cli.add_argument("--index", type=int, required=True)
    cli.add_argument("--count", type=int, required=True)
    args = cli.parse_args(argv)
    # A Ctrl-C is serve's to hear: serve then closes the pipe, and this process ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = Answers()
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s clock-process-{args.index} %(name)s: %(message)s",
    )
    events.configure(sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    asyncio.run(run(args.db, args.index, args.count, answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
