"""The local runtime: the same App on sqlite3, `cryptography`, httpx and uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import shlex
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from scheduling import events
from scheduling.app import App
from scheduling.config import Configuration
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.http_client import HttpxClient
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.slow_clients import HEADER_TIMEOUT_S, timed_h11_protocol
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.services import Services, log

# A request line and headers larger than this are refused with a 400, however they arrive.
MAX_HEAD_BYTES = 16 * 1024
HOST = "127.0.0.1"
LISTEN_BACKLOG = 2048


def build_app(env: Mapping[str, Any], db: SqliteDatabase, **overrides: Any) -> App:
    services = Services(
        config=Configuration.from_mapping(env),
        db=db,
        http=overrides.pop("http", None) or HttpxClient(),
        clock=overrides.pop("clock", None) or SystemClock(),
        make_crypto=CpythonCrypto,
        **overrides,
    )
    return App(services)


async def cron_loop(app: App) -> None:
    """One tick at the start of every minute, like `* * * * *`."""
    clock = app.services.clock
    while True:
        now = clock.now_ms()
        await asyncio.sleep((60_000 - now % 60_000) / 1000)
        try:
            await app.tick(clock.now_ms())
        except Exception:
            log.exception("runner tick failed")


def server_config(
    asgi: AsgiApp, port: int, *, header_timeout_s: float = HEADER_TIMEOUT_S
) -> uvicorn.Config:
    """uvicorn on 127.0.0.1, with deadlines for slow clients (the body's is in `asgi`)."""
    return uvicorn.Config(
        asgi,
        host=HOST,
        port=port,
        http=timed_h11_protocol(header_timeout_s, max_head_bytes=MAX_HEAD_BYTES),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=5,
        lifespan="off",
        # Access logs would print query strings, and launch codes travel in one.
        access_log=False,
        log_level="warning",
    )


class StartupError(Exception):
    """The local server cannot start; the message says why in one line."""


def open_database(path: Path) -> SqliteDatabase:
    """The SQLite file at `path`, created if missing and migrated; its folder must exist."""
    if not path.parent.is_dir():
        raise StartupError(f"--db {path}: the folder {path.parent} does not exist; create it first")
    if path.is_dir():
        raise StartupError(f"--db {path}: is a folder; name a file in it")
    try:
        db = SqliteDatabase(path)
    except sqlite3.Error as exc:
        raise StartupError(f"--db {path}: cannot open it as an SQLite database ({exc})") from None
    try:
        applied = apply_migrations(db.connection)
    except sqlite3.Error as exc:
        db.close()
        raise StartupError(f"--db {path}: cannot apply the migrations ({exc})") from None
    log.info("database %s: %d migration(s) applied", path, len(applied))
    return db


def listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` and listening (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(LISTEN_BACKLOG)
    except (OSError, OverflowError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StartupError(f"cannot listen on {HOST}:{port}: {reason}") from None
    return sock


def origin_port_warning(public_origin: str, port: int) -> str | None:
    """A loopback PUBLIC_ORIGIN must name the port served: the manifest's URLs, the launch
    redirect and the form's Origin check all use it. Any other host is reached through a
    proxy, whose port may differ."""
    parts = urlsplit(public_origin)
    if parts.hostname is None or not _is_loopback(parts.hostname):
        return None
    origin_port = parts.port or (443 if parts.scheme == "https" else 80)
    if origin_port == port:
        return None
    return (
        f"PUBLIC_ORIGIN is {public_origin} but this server listens on port {port}: "
        f"browsers and Dee Wan will be sent to port {origin_port}. "
        f"Serve with --port {origin_port}, or set PUBLIC_ORIGIN's port to {port}."
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def banner(
    config: Configuration,
    port: int,
    *,
    cron: bool,
    vars_path: Path | None,
    secret_in_environment: bool,
) -> list[str]:
    """What the server prints once it listens: where, and how to ask the runner how it is."""
    base = f"http://{HOST}:{port}"
    if secret_in_environment or vars_path is None:
        secret = "$ADMIN_SECRET"  # noqa: S105 - the shell variable's name, shown in a hint
    else:
        secret = f"$(sed -n 's/^ADMIN_SECRET=//p' {shlex.quote(str(vars_path))})"
    lines = [
        f"serving {config.public_origin} on {base} (cron {'on' if cron else 'off'})",
        f'runner status: curl -H "Authorization: Bearer {secret}" {base}/admin/status',
    ]
    if config.is_development:
        lines.append(f'tick now: curl "{base}/__scheduled?cron=*+*+*+*+*"')
    return lines


async def serve(
    port: int,
    db_path: Path,
    env: Mapping[str, Any],
    *,
    cron: bool,
    vars_path: Path | None = None,
    secret_in_environment: bool = False,
) -> None:
    """Serve until SIGINT or SIGTERM; then stop the cron task and close what was opened.

    Raises ConfigurationError or StartupError, before anything is served, when it cannot start.
    """
    config = Configuration.from_mapping(env)
    config.raise_for_problems()
    db = open_database(db_path)
    try:
        sock = listen(port)
    except StartupError:
        db.close()
        raise
    port = sock.getsockname()[1]
    http = HttpxClient()
    app = build_app(env, db, http=http)

    async def tick(when: int | None) -> Any:
        return await app.tick(when if when is not None else app.services.clock.now_ms())

    server = _Server(server_config(AsgiApp(app, tick), port))
    lines = banner(
        config, port, cron=cron, vars_path=vars_path, secret_in_environment=secret_in_environment
    )
    for line in lines:
        log.info("%s", line)
    warning = origin_port_warning(config.public_origin, port)
    if warning:
        log.warning("%s", warning)
    cron_task = asyncio.create_task(cron_loop(app)) if cron else None
    try:
        await server.serve(sockets=[sock])
    finally:
        if cron_task is not None:
            # A tick under way stops at its next wait; sends already out are settled.
            cron_task.cancel()
            await asyncio.gather(cron_task, return_exceptions=True)
        await http.aclose()
        db.close()
        log.info("stopped")


class _Server(uvicorn.Server):
    """uvicorn's server, except that it does not raise the stop signal again once stopped
    (uvicorn does, for an embedding program): `serve` still has its cron task to stop and
    its HTTP client and database to close, and the process then exits with status 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        stops = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    events.configure(sys.stderr)
    # httpx logs every request line at INFO; the app logs what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
