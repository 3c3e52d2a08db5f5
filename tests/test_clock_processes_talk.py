"""How `serve` talks to its clock processes (`clock_processes.py`), with fake processes that
speak the same lines: each installation's clock is told through the process that keeps it;
a process that does not answer in time, or is not running, is a clock that could not be told
(the watchdog covers); a process that ended is started again."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from scheduling.ports import ClockUnavailable
from scheduling.runtimes.cpython.clock_processes import ClockProcesses, owner_of

# A clock process reduced to its conversation: `answer` says every clock moved, `silent`
# never answers, `ends-once` ends at the first line it is told unless it did so before, and
# `garbles-once` answers it with something not JSON (and would go on).
FAKE = r"""
import json, sys
behaviour, folder, index = sys.argv[1:]
env = json.loads(sys.stdin.readline())["env"]
print(json.dumps({"ready": len(env)}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    with open(f"{folder}/told-{index}", "a") as told:
        told.write(message["arm"] + "\n")
    marker = f"{folder}/ended-{index}"
    if behaviour.endswith("-once"):
        try:
            open(marker, "x").close()
            if behaviour == "ends-once":
                sys.exit(3)
            print("Traceback (most recent call last):", flush=True)
            continue
        except FileExistsError:
            pass
    if behaviour != "silent":
        print(json.dumps({"id": message["id"], "moved": True}), flush=True)
"""


def fakes(behaviour: str, folder: Path) -> ClockProcesses:
    return ClockProcesses(
        2,
        str(folder / "plugin.sqlite3"),
        {"SCHEDULE_CLOCK": "1"},
        answer_within_s=0.3,
        first_restart_pause_s=0.05,
        command=lambda _db, index, _count: [
            sys.executable,
            "-c",
            FAKE,
            behaviour,
            str(folder),
            str(index),
        ],
    )


def told(folder: Path, index: int) -> list[str]:
    path = folder / f"told-{index}"
    return path.read_text().split() if path.exists() else []


def test_each_clock_is_told_through_the_process_that_keeps_it(tmp_path: Path) -> None:
    installations = [f"ins_{n}" for n in range(8)]

    async def scenario() -> None:
        clocks = fakes("answer", tmp_path)
        assert await clocks.start() == 2  # each said it armed one (the variables it was told)
        try:
            for installation in installations:
                assert await clocks.arm(installation, 1_000) is True
        finally:
            await clocks.stop()

    asyncio.run(scenario())
    for index in (0, 1):
        expected = [i for i in installations if owner_of(i, 2) == index]
        assert expected  # both processes keep some
        assert told(tmp_path, index) == expected


def test_a_process_that_does_not_answer_is_a_clock_not_told(tmp_path: Path) -> None:
    async def scenario() -> None:
        clocks = fakes("silent", tmp_path)
        await clocks.start()
        try:
            with pytest.raises(ClockUnavailable, match="did not answer"):
                await clocks.arm("ins_0", 1_000)
        finally:
            await clocks.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize("behaviour", ["ends-once", "garbles-once"])
def test_a_process_that_ended_or_garbled_is_started_again_and_told_again(
    behaviour: str, tmp_path: Path
) -> None:
    async def scenario() -> None:
        clocks = fakes(behaviour, tmp_path)
        await clocks.start()
        index = owner_of("ins_0", 2)
        first = clocks.pids()[index]
        try:
            with pytest.raises(ClockUnavailable):
                await clocks.arm("ins_0", 1_000)  # it ended (or was ended) on hearing it
            async with asyncio.timeout(30):  # started again, not left ended
                while clocks.pids()[index] in (None, first):  # noqa: ASYNC110 - a restart
                    await asyncio.sleep(0.01)
            assert await clocks.arm("ins_0", 1_000) is True
        finally:
            await clocks.stop()

    asyncio.run(scenario())
