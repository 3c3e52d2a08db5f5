"""Startup of the Worker under Pyodide: its top level beside Cloudflare's FastAPI example, and
what an isolate's first page costs beside a later one.

Cloudflare runs the entry's top level at deploy and snapshots the memory after it; that top
level must fit the startup limit (1 s of CPU). Cloudflare's own FastAPI example for Python
Workers (`bench/fixtures/fastapi_example/`, fastapi 0.118.2 and starlette 0.48.0, fetched
from PyPI once) is the heaviest top level known to deploy. Timed side by side, alternately,
each in a fresh Pyodide 314 after workerd's own imports (median of `--imports` runs each):
the entry's top level (the runner, the HTTP app, its pages and compiled templates) and the
example's. Then, in a fresh harness process (a fresh isolate) with an installation and an
editor's session made by an earlier one on the same D1 state: the CPU time of each route's
first request and the median of `--later` later ones, the content page first (an editor's
first page on the isolate), and of a cron tick with nothing due.

Figures are this machine's: the harness process's CPU time (Python, the JS it calls, V8's
compiler threads). D1 runs in Miniflare's workerd process and is not counted. Asserts
nothing. The last two lines are the ratios: `top level / FastAPI example: R` and
`first page / later page: R`.

    python -m bench.startup_bench [--imports 3] [--later 5]

Run from the repo root with the venv's Python (it imports `tests` for the harness).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from tests.pyodide_harness.harness import (
    ADMIN_SECRET,
    HERE,
    ROOT,
    FakeCoreProcess,
    Harness,
    ensure_installed,
    import_probe,
)
from tests.support.worker_browser import OPERATOR, Browser, install, launch

ZONE = "Europe/Paris"  # the demo site's zone
EXAMPLE = ROOT / "bench" / "fixtures" / "fastapi_example"
EXAMPLE_WHEELS = HERE / ".cache" / "fastapi_example"


def example_wheels() -> Path:
    """The FastAPI example's own wheels (its `requirements.txt`), fetched from PyPI once."""
    pins = [
        line.strip()
        for line in (EXAMPLE / "requirements.txt").read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    have = {path.name.split("-")[0].lower() for path in EXAMPLE_WHEELS.glob("*.whl")}
    if {pin.split("==")[0].replace("-", "_").lower() for pin in pins} - have:
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
                *("--only-binary=:all:", "--platform", "any", "--python-version", "3.14"),
                *("--implementation", "py", "--dest", str(EXAMPLE_WHEELS), *pins),
            ],
            check=True,
        )
    return EXAMPLE_WHEELS


def top_levels(runs: int) -> float:
    """The two top levels, alternately in fresh Pyodides; their CPU ratio (medians)."""
    wheels = example_wheels()
    ours: list[dict[str, Any]] = []
    example: list[dict[str, Any]] = []
    for _ in range(runs):
        ours.append(import_probe("entry", preload="workerd"))
        example.append(import_probe("entry", preload="workerd", src=EXAMPLE / "src", wheels=wheels))
    print(f"\nTop levels in a fresh Pyodide (median of {runs} each; load average {load()}):")
    print("| top level | modules | wall ms | CPU ms |")
    print("|---|---|---|---|")
    cpu: dict[str, float] = {}
    for label, reports in (
        ("the entry: runner, HTTP app, pages, compiled templates", ours),
        ("Cloudflare's FastAPI example", example),
    ):
        wall = statistics.median(r["import_ms"] for r in reports)
        cpu[label] = statistics.median(r["import_cpu_ms"] for r in reports)
        print(f"| {label} | {reports[0]['modules']} | {wall:,.0f} | {cpu[label]:,.0f} |")
    runs_cpu = ", ".join(
        f"{a['import_cpu_ms']:,.0f}/{b['import_cpu_ms']:,.0f}"
        for a, b in zip(ours, example, strict=True)
    )
    print(f"each run, entry/example CPU ms: {runs_cpu}")
    first, second = cpu.values()
    return first / second


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def wall_time(days_ahead: int) -> str:
    day = datetime.now(ZoneInfo(ZONE)).date() + timedelta(days=days_ahead)
    return f"{day.isoformat()}T12:00"


class Session:
    """An installation and an editor's content session, made by a first harness process."""

    def __init__(self, workdir: Path) -> None:
        first = Harness(workdir)
        self.port = first.port
        self.core = FakeCoreProcess(first.origin, workdir / "fake_core.log")
        self.core.control("POST", "seed", {"demo": True})
        self.dev_vars = {
            **first.base_vars,
            "ENVIRONMENT": "development",
            "DEE_WAN_DEV_ORIGINS": self.core.base_url,
        }
        first.set_vars(self.dev_vars)
        with first.client() as client:
            self.installation_id = install(self.core, client)["id"]
            browser = Browser(client, first.origin)
            self.csrf = launch(self.core, browser, self.installation_id, content_id="cnt_spring")
            self.cookie = browser.cookie
            self.shown = browser.shown
        first.close()


def requests(workdir: Path, later: int) -> float:
    """Each route's first request in a fresh isolate and later ones; the content page's
    first ÷ later (the isolate's first request)."""
    session = Session(workdir)
    worker = Harness(workdir, port=session.port)  # a fresh isolate on the same D1 state
    worker.set_vars(session.dev_vars)
    base = f"/installations/{session.installation_id}"
    form = {
        "transition": "publish:published",
        "timezone": ZONE,
        "fold": "",
        "csrf_token": session.csrf,
        **session.shown,
    }
    basic = httpx.BasicAuth("operator", ADMIN_SECRET)
    unknown_code = {"code": "dwa_" + "x" * 43}
    print(f"\nRequests in a fresh isolate (CPU ms; later: median of {later}; load {load()}):")
    print("| route | status | first | later |")
    print("|---|---|---|---|")
    try:
        with worker.client(follow_redirects=False) as client:
            browser = Browser(client, worker.origin, cookie=session.cookie)

            def create(n: int) -> httpx.Response:
                fields = {**form, "local_time": wall_time(3 + n)}
                return browser.post_form(f"{base}/schedules", fields)

            routes: list[tuple[str, Callable[[int], httpx.Response]]] = [
                (
                    "GET the content page (reads Dee Wan; the isolate's first)",
                    lambda _: browser.get(base),
                ),
                ("GET /", lambda _: client.get("/")),
                ("GET /dee-wan/manifest.json", lambda _: client.get("/dee-wan/manifest.json")),
                ("GET /healthz", lambda _: client.get("/healthz")),
                ("GET /static/app.css", lambda _: client.get("/static/app.css")),
                ("GET /admin/status", lambda _: client.get("/admin/status", headers=OPERATOR)),
                ("GET /admin/metrics", lambda _: client.get("/admin/metrics", headers=OPERATOR)),
                ("GET /admin (the operator page)", lambda _: client.get("/admin", auth=basic)),
                (
                    "POST /dee-wan/activate (an unknown code)",
                    lambda _: client.post("/dee-wan/activate", json=unknown_code),
                ),
                ("POST a schedule (reads Dee Wan)", create),
                ("PROPFIND /", lambda _: client.request("PROPFIND", "/")),
            ]
            ratio = 0.0
            for label, call in routes:
                statuses, cpu = measured(worker, call, later)
                row(label, statuses, cpu)
                ratio = ratio or cpu[0] / statistics.median(cpu[1:])
        now = int(time.time() * 1000)
        _, cpu = measured(worker, lambda _: worker.scheduled(now) and 200, later)
        row("scheduled(): a tick, nothing due", "200", cpu)
    finally:
        worker.close()
        session.core.close()
    return ratio


def row(label: str, statuses: str, cpu: list[float]) -> None:
    print(f"| {label} | {statuses} | {cpu[0]:,.1f} | {statistics.median(cpu[1:]):,.1f} |")


def measured(worker: Harness, call: Callable[[int], Any], later: int) -> tuple[str, list[float]]:
    """Call once and `later` more times, one at a time: the statuses, and each call's CPU."""
    statuses: set[str] = set()
    cpu: list[float] = []
    for n in range(later + 1):
        worker.invocations(reset=True)
        result = call(n)
        statuses.add(str(getattr(result, "status_code", result)))
        [invocation] = worker.invocations(reset=True)
        cpu.append(float(invocation["cpu_ms"]))
    return "/".join(sorted(statuses)), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imports", type=int, default=3, help="fresh Pyodides per import")
    parser.add_argument("--later", type=int, default=5, help="requests after each first one")
    args = parser.parse_args()
    ensure_installed()
    top_level = top_levels(args.imports)
    workdir = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    try:
        first_page = requests(workdir, args.later)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\ntop level / FastAPI example: {top_level:.2f}")
    print(f"first page / later page: {first_page:.2f}")


if __name__ == "__main__":
    main()
