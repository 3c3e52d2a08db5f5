"""Startup of the Worker under Pyodide: what its imports cost, and what each route costs the
first time in an isolate and after.

Cloudflare runs the entry's top level at deploy and snapshots the memory after it; that top
level must fit the startup limit (1 s of CPU). Printed, each in a fresh Pyodide 314 (median
of `--imports` runs): the import of the entry (what the snapshot holds), of the runner's path
alone, of the entry with the HTTP app (what an isolate's first request adds), and of the SDK
alone. Then, in a fresh harness process (a fresh isolate) with an installation and an editor's
session made by an earlier one on the same D1 state: the CPU time of each route's first
request and the median of `--later` later ones, and of a cron tick with nothing due.

Figures are this machine's: the harness process's CPU time (Python, the JS it calls, V8's
compiler threads) and wall time. D1 runs in Miniflare's workerd process and is not counted.
Asserts nothing.

    python -m bench.startup_bench [--imports 3] [--later 5]

Run from the repo root with the venv's Python (it imports `tests` for the harness).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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
    FakeCoreProcess,
    Harness,
    ensure_installed,
    import_probe,
)
from tests.support.worker_browser import OPERATOR, Browser, install, launch

ZONE = "Europe/Paris"  # the demo site's zone
IMPORTS = [
    ("entry: its top level, what the snapshot holds", "entry"),
    (
        "the runner's path alone (tick, alarm, the Workers services)",
        "scheduling.runner.tick,scheduling.runner.alarm,scheduling.runtimes.workers.bridge",
    ),
    (
        "entry and the HTTP app (what an isolate's first request adds)",
        "entry,scheduling.runtimes.workers.edge",
    ),
    ("the workers SDK alone", "workers"),
]


def imports(runs: int) -> None:
    print(f"\nImports in a fresh Pyodide (median of {runs}; load average {load()}):")
    print("| import | modules | wall ms | CPU ms |")
    print("|---|---|---|---|")
    for label, modules in IMPORTS:
        reports = [import_probe(modules) for _ in range(runs)]
        wall = statistics.median(r["import_ms"] for r in reports)
        cpu = statistics.median(r["import_cpu_ms"] for r in reports)
        print(f"| {label} | {reports[0]['modules']} | {wall:,.0f} | {cpu:,.0f} |")


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


def requests(workdir: Path, later: int) -> None:
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
                ("GET / (the isolate's first request)", lambda _: client.get("/")),
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
                ("GET the content page (reads Dee Wan)", lambda _: browser.get(base)),
                ("POST a schedule (reads Dee Wan)", create),
                ("PROPFIND /", lambda _: client.request("PROPFIND", "/")),
            ]
            for label, call in routes:
                statuses, cpu = measured(worker, call, later)
                row(label, statuses, cpu)
        now = int(time.time() * 1000)
        _, cpu = measured(worker, lambda _: worker.scheduled(now) and 200, later)
        row("scheduled(): a tick, nothing due", "200", cpu)
    finally:
        worker.close()
        session.core.close()


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
    imports(args.imports)
    workdir = Path(tempfile.mkdtemp(prefix="startup-bench-"))
    try:
        requests(workdir, args.later)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
