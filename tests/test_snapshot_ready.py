"""What an isolate's first request would otherwise do once: done at import, so that a Worker's
memory snapshot holds it (the route table's patterns), or not needed at all (strptime's module:
wall times and instants are read without it)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from scheduling.domain.protocol import _existing_instant, instant_ms
from scheduling.domain.times import parse_wall
from tests.pyodide_harness.harness import ROOT

FIRST_REQUEST = """
import re, sys
import scheduling.app
from scheduling.domain.times import resolve_local_time
from scheduling.domain.times import wall_text
from scheduling.domain.protocol import instant_ms
from scheduling.http.requests import Headers, Request

compiled = []
original = re._compile
re._compile = lambda pattern, flags: compiled.append(pattern) or original(pattern, flags)
before = set(sys.modules)
path = "/installations/ins_1/schedules/sch_1/cancel"
app = scheduling.app.App(None)  # what a first request builds: its router among it
app.router.match(Request("POST", "http://x" + path, Headers([]), b""))
instant_ms("2026-07-01T13:00:00Z")
wall_text("2026-07-01T13:00")
print(sorted(set(sys.modules) - before), compiled)
"""


def test_a_first_request_s_app_routing_and_time_parsing_import_and_compile_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-c", FIRST_REQUEST],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[] []"


WALLS = ["2026-03-29T02:30", "2024-02-29T23:59", "2026-02-29T12:00", "2026-13-01T00:00",
         "2026-01-01T24:00", "2026-01-01T10:60", "0000-01-01T00:00", "2026-3-29T2:30",
         "2026-03-29 02:30", "", "2026-03-29T02:30Z"]  # fmt: skip


@pytest.mark.parametrize("text", WALLS)
def test_a_wall_time_reads_as_strptime_reads_it(text: str) -> None:
    try:
        expected: datetime | type[ValueError] = datetime.strptime(text, "%Y-%m-%dT%H:%M")
    except ValueError:
        expected = ValueError
    try:
        got: datetime | type[ValueError] = parse_wall(text)
    except ValueError:
        got = ValueError
    assert got == expected


@pytest.mark.parametrize(
    "text", ["2026-07-01T13:00:00Z", "2024-02-29T23:59:59Z", "2026-02-29T00:00:00Z",
             "2026-07-01T13:00:60Z", "2026-07-01T24:00:00Z"],
)  # fmt: skip
def test_an_instant_reads_as_strptime_reads_it(text: str) -> None:
    try:
        moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        expected: int | type[ValueError] = int(moment.timestamp() * 1000)
    except ValueError:
        expected = ValueError
    try:
        got: int | type[ValueError] = instant_ms(_existing_instant(text))
    except ValueError:
        got = ValueError
    assert got == expected


def test_the_workers_runtime_turns_off_pydantic_s_plugin_scan_before_any_model() -> None:
    """pydantic reads the variable when it builds its first model: the package sets it, and
    every module of the Worker that builds one is imported through it."""
    code = (
        "import os, scheduling.runtimes.workers, pydantic.plugin._loader as loader;"
        "print(os.environ['PYDANTIC_DISABLE_PLUGINS'], list(loader.get_plugins()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["__all__", "[]"]
