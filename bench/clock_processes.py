"""The installations' alarm clocks in N processes on one SQLite file, for
`bench/clock_bench.py --runtime processes`.

On Workers each installation's clock is an isolate of its own; in one interpreter a burst
of alarms queues for one CPU, so a local burst would measure the interpreter and not the
design. Here each of N processes keeps the clocks of a fixed set of installations (CRC-32
of the id, modulo N): it builds the app as `serve` does (`SCHEDULE_CLOCK=1`, the local
clocks, no cron), tells each of its installations' clocks as a create tells it, says
`ready` on its standard output, and runs them until its standard input closes (when the
benchmark is done with it, or killed).

    python -m bench.clock_processes --db PATH --vars FILE --installations K --index I --count N
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from scheduling.actions.releases import tell_clock
from scheduling.runtimes.cpython.server import attach_clocks, build_app, load_vars
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase


def owner_of(installation_id: str, count: int) -> int:
    """Which of `count` processes keeps the installation's clock: always the same one."""
    return zlib.crc32(installation_id.encode()) % count


async def run(db_path: Path, vars_path: Path, installations: int, index: int, count: int) -> None:
    db = SqliteDatabase(db_path)
    app = build_app(load_vars(vars_path, {}), db)
    clocks = attach_clocks(app)
    assert clocks is not None, "the vars must say SCHEDULE_CLOCK=1"
    mine = [f"ins_{n}" for n in range(installations) if owner_of(f"ins_{n}", count) == index]
    for installation_id in mine:
        await tell_clock(app.services, installation_id)
    print(f"ready: {len(mine)} installations", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await clocks.stop()
    db.close()


@contextlib.contextmanager
def clock_processes(
    db_path: Path, vars_path: Path, installations: int, count: int
) -> Iterator[list[subprocess.Popen[str]]]:
    """`count` processes, each once it has told its clocks; they stop on the way out."""
    processes = []
    try:
        for index in range(count):
            command = [sys.executable, "-m", "bench.clock_processes", "--db", str(db_path)]
            command += ["--vars", str(vars_path), "--installations", str(installations)]
            command += ["--index", str(index), "--count", str(count)]
            processes.append(
                subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )
        for process in processes:
            assert process.stdout is not None
            if not process.stdout.readline().startswith("ready"):
                raise RuntimeError(f"clock process {process.args!r} ended before it was ready")
        yield processes
    finally:
        for process in processes:
            if process.stdin is not None:
                process.stdin.close()
        for process in processes:
            process.wait(60)


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m bench.clock_processes")
    cli.add_argument("--db", type=Path, required=True)
    cli.add_argument("--vars", type=Path, required=True)
    cli.add_argument("--installations", type=int, required=True)
    cli.add_argument("--index", type=int, required=True)
    cli.add_argument("--count", type=int, required=True)
    args = cli.parse_args()
    asyncio.run(run(args.db, args.vars, args.installations, args.index, args.count))


if __name__ == "__main__":
    main()
