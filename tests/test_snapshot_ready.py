"""What an isolate's first request would otherwise do once: done at import, so that a Worker's
memory snapshot holds it (the route table's patterns, strptime's module and formats)."""

from __future__ import annotations

import subprocess
import sys

from tests.pyodide_harness.harness import ROOT

FIRST_REQUEST = """
import re, sys
import scheduling.app
from scheduling.domain.localtime import resolve_local_time
from scheduling.domain.time_words import wall_text
from scheduling.domain.wire import instant_ms
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
