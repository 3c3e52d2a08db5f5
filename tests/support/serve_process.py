"""`python -m scheduling serve` as a real process on a free port, for tests that need the
whole local runtime (its cron, its clocks, its log lines)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from scheduling.runtimes.cpython.adapters import SystemClock
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.activation import install
from tests.support.app import ADMIN_SECRET, TOKEN_KEY, make_app
from tests.support.world import insert_due


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def development_env(port: int, core_url: str, **more: str) -> dict[str, str]:
    """`serve`'s variables in development on `port`, with a Dee Wan at `core_url`."""
    return {
        "ENVIRONMENT": "development",
        "PUBLIC_ORIGIN": f"http://localhost:{port}",
        "DEE_WAN_DEV_ORIGINS": core_url,
        "ADMIN_SECRET": ADMIN_SECRET,
        "TOKEN_KEY": TOKEN_KEY,
        **more,
    }


def prepare_database(
    db_path: Path,
    env: dict[str, str],
    core_url: str,
    installations: tuple[str, ...],
    due: dict[str, int] | None = None,
) -> None:
    """The file `serve` will open: migrated, each installation installed from `core_url`,
    and a pending publish of each content of `due` (content id: due instant) for the first."""
    prepared = SqliteDatabase(db_path)
    apply_migrations(prepared.connection)
    app = make_app(prepared, SystemClock(), env=env)
    for installation in installations:
        asyncio.run(install(app, installation, core_url))
    for content_id, at in (due or {}).items():
        asyncio.run(insert_due(prepared, installations[0], content_id, at))
    prepared.close()


def write_vars(path: Path, **values: str) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def start_serve(db_path: Path, vars_file: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    """`serve` with only the variables of `vars_file` (the plugin's are taken out of the
    environment it inherits)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PUBLIC_ORIGIN", "TOKEN_KEY", "ADMIN_SECRET", "ENVIRONMENT")
    }
    command = [sys.executable, "-m", "scheduling", "serve", "--port", str(port)]
    command += ["--db", str(db_path), "--vars", str(vars_file), *extra]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def wait_until_up(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"server exited: {output}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/dee-wan/manifest.json", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("server did not start")
