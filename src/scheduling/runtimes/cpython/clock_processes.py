"""`serve --clock-processes N`: the installations' alarm clocks in N child processes, each
the clocks of a fixed set of installations (CRC-32 of the id, modulo N), all on `serve`'s
SQLite file. On Workers each installation's clock is an isolate of its own; in one
interpreter a burst of alarms queues for one CPU, so a local burst would measure the
interpreter and not the design.

This is the `ScheduleClocks` port on `serve`'s side: telling a clock sends one JSON line to
the process that owns it (`clock_process.py` describes the conversation). A process that
does not answer within `ANSWER_WITHIN_S`, or is not running, is a clock that could not be
told (`ClockUnavailable`): the cron's watchdog tells it again within a minute and sends what
it left overdue. A process that ends is started again, after a pause that doubles while it
keeps ending; it arms its installations from D1 as it starts, so nothing waits for the
watchdog once it is back. The processes stop when `serve` does, and end by themselves when
`serve` is killed (their input closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduling.ports import ClockUnavailable
from scheduling.services import log

ANSWER_WITHIN_S = 5.0
FIRST_RESTART_PAUSE_S = 1.0
LAST_RESTART_PAUSE_S = 60.0
STEADY_S = 60.0  # a process that ran this long starts again after the first pause
START_WITHIN_S = 60.0  # `start()` waits this long for the processes to arm from D1
STOP_WITHIN_S = 10.0  # then a process still running is killed
MAX_LINE_BYTES = 1024 * 1024


def owner_of(installation_id: str, count: int) -> int:
    """Which of `count` processes keeps the installation's clock: always the same one."""
    return zlib.crc32(installation_id.encode()) % count


def child_command(db_path: str, index: int, count: int) -> list[str]:
    module = "scheduling.runtimes.cpython.clock_process"
    return [
        sys.executable,
        "-m",
        module,
        "--db",
        db_path,
        "--index",
        f"{index}",
        "--count",
        f"{count}",
    ]


@dataclass
class _Child:
    index: int
    process: asyncio.subprocess.Process | None = None
    waiting: dict[int, asyncio.Future[bool]] = field(default_factory=dict)  # id -> answer
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # armed from D1 once
    armed: int = 0
    starts: int = 0


class ClockProcesses:
    """The clocks of every installation, across `count` child processes."""

    def __init__(
        self,
        count: int,
        db_path: str,
        env: Mapping[str, str],
        *,
        answer_within_s: float = ANSWER_WITHIN_S,
        first_restart_pause_s: float = FIRST_RESTART_PAUSE_S,
        command: Callable[[str, int, int], list[str]] = child_command,
    ) -> None:
        """`command(db_path, index, count)`: how to start a process (tests start fakes)."""
        self.count = count
        self.db_path = db_path
        self.env = dict(env)
        self.answer_within_s = answer_within_s
        self.first_restart_pause_s = first_restart_pause_s
        self.command = command
        self._children = [_Child(index) for index in range(count)]
        self._keepers: list[asyncio.Task[None]] = []
        self._next_id = 0
        self._stopping = asyncio.Event()

    async def start(self) -> int:
        """Start the processes; returns how many installations they armed from D1 (those
        that said so within `START_WITHIN_S`: the others arm as they come)."""
        self._keepers = [
            asyncio.create_task(self._keep(child), name=f"clock-process-{child.index}")
            for child in self._children
        ]
        waits = [asyncio.create_task(child.ready.wait()) for child in self._children]
        _, late = await asyncio.wait(waits, timeout=START_WITHIN_S)
        for wait in late:
            wait.cancel()
        if late:
            log.warning("%d clock process(es) not ready: they arm from D1 as they start", len(late))
        return sum(child.armed for child in self._children)

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        child = self._children[owner_of(installation_id, self.count)]
        process = child.process
        if process is None or process.stdin is None or process.returncode is not None:
            raise ClockUnavailable(f"clock process {child.index} is not running")
        self._next_id += 1
        message_id = self._next_id
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        child.waiting[message_id] = answer
        line = {"id": message_id, "arm": installation_id, "at": wake_at}
        try:
            process.stdin.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
            async with asyncio.timeout(self.answer_within_s):
                await process.stdin.drain()
                return await answer
        except (TimeoutError, ConnectionError) as exc:
            raise ClockUnavailable(
                f"clock process {child.index} did not answer ({type(exc).__name__})"
            ) from exc
        finally:
            child.waiting.pop(message_id, None)

    async def stop(self) -> None:
        """Close each process's input (it stops its clocks and ends), wait for them, then
        kill any still running after `STOP_WITHIN_S`."""
        self._stopping.set()
        running = [c.process for c in self._children if c.process is not None]
        for process in running:
            if process.stdin is not None:
                process.stdin.close()
        for process in running:
            try:
                await asyncio.wait_for(process.wait(), STOP_WITHIN_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for keeper in self._keepers:
            keeper.cancel()
        await asyncio.gather(*self._keepers, return_exceptions=True)

    def pids(self) -> Sequence[int | None]:
        """Each process's id, or None while it is not running (for tests and benchmarks)."""
        return [c.process.pid if c.process else None for c in self._children]

    async def _keep(self, child: _Child) -> None:
        """Run the child's process, and start it again each time it ends until `stop()`."""
        pause = self.first_restart_pause_s
        while not self._stopping.is_set():
            began = time.monotonic()
            code: int | None = None
            try:
                code = await self._run(child)
            except OSError as exc:
                log.error("clock process %d could not start: %s", child.index, exc)
            except Exception:  # a line it should not have said: it is started again
                log.exception("clock process %d: talking to it failed", child.index)
            if self._stopping.is_set():
                return
            if time.monotonic() - began > STEADY_S:
                pause = self.first_restart_pause_s
            log.warning(
                "clock process %d ended (exit code %s); its installations' clocks could not"
                " be told until it starts again in %g s (the watchdog covers them)",
                child.index,
                code,
                pause,
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_RESTART_PAUSE_S)

    async def _run(self, child: _Child) -> int:
        """One life of the child's process: start it, tell it the variables, hand its
        answers to the calls waiting for them until its output ends; its exit code."""
        process = await asyncio.create_subprocess_exec(
            *self.command(self.db_path, child.index, self.count),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=MAX_LINE_BYTES,
            # Out of the terminal's process group: a Ctrl-C is serve's to hear (even while a
            # process is still importing); serve then closes the pipe, and the process ends.
            start_new_session=True,
        )
        child.process = process
        child.starts += 1
        if process.stdin is None or process.stdout is None:  # both piped: never
            raise OSError("the clock process has no pipes")
        log.info("clock process %d started (pid %d)", child.index, process.pid)
        try:
            process.stdin.write(json.dumps({"env": self.env}).encode() + b"\n")
            with contextlib.suppress(ConnectionError):
                await process.stdin.drain()
            while line := await process.stdout.readline():
                self._heard(child, json.loads(line))
            return await process.wait()
        finally:
            child.process = None
            for answer in child.waiting.values():
                if not answer.done():
                    answer.set_exception(ConnectionError("the clock process ended"))
            child.waiting.clear()
            if process.returncode is None and not self._stopping.is_set():
                with contextlib.suppress(ProcessLookupError):
                    process.kill()  # one life at a time: the next starts once this ended
                await process.wait()

    def _heard(self, child: _Child, message: Mapping[str, Any]) -> None:
        if "ready" in message:
            child.armed = int(message["ready"])
            child.ready.set()
            return
        answer = child.waiting.get(int(message["id"]))
        if answer is None or answer.done():
            return  # its caller stopped waiting
        if "unavailable" in message:
            answer.set_exception(ConnectionError(str(message["unavailable"])))
        else:
            answer.set_result(bool(message["moved"]))
