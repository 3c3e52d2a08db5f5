"""`python -m scheduling serve`: the same App on sqlite3, `cryptography`, httpx and uvicorn,
on 127.0.0.1, for development and tests.

Before anything is served, `serve` reads the variables (a `.dev.vars` file, the environment
overriding), checks them, opens the database file (owner-only, migrated) and binds the port;
each failure is a `StartupError` in one line. uvicorn then serves with its own settings and
stops on Ctrl-C or SIGTERM. While it serves, its lifespan (`running`) keeps the cron's
minute tick and, with SCHEDULE_CLOCK=1, an alarm clock per installation, and stops them
before the database closes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import shlex
import socket
import sqlite3
import stat
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from scheduling.app import App
from scheduling.config import RENAMED, SECRETS, VARIABLES, Configuration
from scheduling.limits import VISITOR_CONNECTIONS
from scheduling.ports import configure_events
from scheduling.runtimes.cpython.adapters import (
    CpythonCrypto,
    HttpxClient,
    SystemClock,
    outbound_client,
)
from scheduling.runtimes.cpython.asgi import AsgiApp, app_tick
from scheduling.runtimes.cpython.local_clocks import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from scheduling.services import Services, log

HOST = "127.0.0.1"
OUTBOUND_CONNECTIONS = 100  # Dee Wan's calls and the runner's (httpx's default pool)
# Once told to stop, how long uvicorn lets requests under way finish before cancelling them.
GRACEFUL_STOP_S = 5


class StartupError(Exception):
    """The local server cannot start; the message says why in one line."""


def parse_dev_vars(text: str) -> dict[str, str]:
    """The KEY=VALUE lines of a `.dev.vars` file (the file `wrangler dev` reads)."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def load_vars(path: Path | None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The plugin's variables from `path`, each one set in `environ` overriding the file."""
    values = parse_dev_vars(path.read_text("utf-8")) if path else {}
    for name in (*VARIABLES, *RENAMED, *SECRETS):
        if name in environ:
            values[name] = environ[name]
    return values


def open_database(path: Path) -> SqliteDatabase:
    """The SQLite file at `path`, created if missing and migrated; its folder must exist."""
    if not path.parent.is_dir():
        raise StartupError(f"--db {path}: the folder {path.parent} does not exist; create it first")
    if path.is_dir():
        raise StartupError(f"--db {path}: is a folder; name a file in it")
    _make_private(path)
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


def _make_private(path: Path) -> None:
    """A database left readable by others (made before the plugin created them 0600) is made
    owner-only, with its -wal and -shm: they hold CSRF tokens, names and sealed tokens."""
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            mode = stat.S_IMODE(file.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:
            try:
                file.chmod(mode & 0o700)
            except OSError as exc:
                raise StartupError(
                    f"--db {path}: {file} is readable by others and cannot be made"
                    f" owner-only ({exc.strerror})"
                ) from None
            log.warning("%s was readable by others; it is now owner-only", file)


def listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` and listening (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen()
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
    clocks = ", an alarm clock per installation" if config.schedule_clock else ""
    lines = [
        f"serving {config.public_origin} on {base} (cron {'on' if cron else 'off'}{clocks})",
        f'runner status: curl -H "Authorization: Bearer {secret}" {base}/admin/status',
    ]
    if config.is_development:
        lines.append(f'tick now: curl "{base}/__scheduled?cron=*+*+*+*+*"')
    return lines


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


def attach_clocks(app: App) -> LocalClocks | None:
    """With SCHEDULE_CLOCK=1, an alarm clock per installation, as a Worker with the
    `SCHEDULE_CLOCK` binding has; the cron's tick is then their watchdog. Else None. The
    caller starts and stops them."""
    if not app.services.config.schedule_clock:
        return None
    clocks = LocalClocks(app)
    app.services.clocks = clocks
    return clocks


async def cron_loop(app: App) -> None:
    """One tick at the start of every minute, like `* * * * *`: each invocation carries the
    minute it stands for, so a late wake-up is measured as Workers' late deliveries are."""
    clock = app.services.clock
    while True:
        minute = (clock.now_ms() // 60_000 + 1) * 60_000
        await asyncio.sleep(max(0, minute - clock.now_ms()) / 1000)
        try:
            await app.tick(minute)
        except Exception:
            log.exception("runner tick failed")


@asynccontextmanager
async def running(app: App, *, cron: bool, clients: Sequence[HttpxClient]) -> AsyncIterator[None]:
    """What runs beside the requests while uvicorn serves (its lifespan): the alarm clocks,
    armed from D1, and the cron. On the way out they stop (a tick or an alarm under way stops
    at its next wait; what it left claimed waits for its lease) and the clients close."""
    clocks = attach_clocks(app)
    if clocks is not None:
        armed = await clocks.start()
        log.info("alarm clocks armed from D1 (installations with something live): %d", armed)
    cron_task = asyncio.create_task(cron_loop(app)) if cron else None
    try:
        yield
    finally:
        if cron_task is not None:
            cron_task.cancel()
            await asyncio.gather(cron_task, return_exceptions=True)
        if clocks is not None:
            await clocks.stop()
        for client in clients:
            await client.aclose()


def server_config(asgi: AsgiApp, port: int) -> uvicorn.Config:
    """uvicorn on 127.0.0.1 with its own limits, and the app's lifespan."""
    return uvicorn.Config(
        asgi,
        host=HOST,
        port=port,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_STOP_S,
        # Access logs would print query strings, and launch codes travel in one.
        access_log=False,
        # The client is the peer address. uvicorn would otherwise believe X-Forwarded-For
        # from a loopback peer, and every peer of 127.0.0.1 is one: each failed launch
        # could then claim to come from a new client.
        proxy_headers=False,
        log_level="warning",
        log_config=None,  # uvicorn's lines go through the process's handlers
    )


async def serve(
    port: int,
    db_path: Path,
    env: Mapping[str, Any],
    *,
    cron: bool,
    vars_path: Path | None = None,
    secret_in_environment: bool = False,
) -> None:
    """Serve until uvicorn hears Ctrl-C or SIGTERM.

    Raises ConfigurationError or StartupError, before anything is served, when it cannot start.
    """
    config = Configuration.from_mapping(env)
    config.raise_for_problems()
    db = open_database(db_path)
    try:
        with listen(port) as sock:
            port = sock.getsockname()[1]
            public_only = not config.is_development
            http = outbound_client(max_connections=OUTBOUND_CONNECTIONS, public_only=public_only)
            visitor = outbound_client(max_connections=VISITOR_CONNECTIONS, public_only=public_only)
            app = build_app(env, db, http=http, visitor_http=visitor)
            lifespan = partial(running, app, cron=cron, clients=(http, visitor))
            server = uvicorn.Server(server_config(AsgiApp(app, app_tick(app), lifespan), port))
            said = banner(
                config,
                port,
                cron=cron,
                vars_path=vars_path,
                secret_in_environment=secret_in_environment,
            )
            for line in said:
                log.info("%s", line)
            warning = origin_port_warning(config.public_origin, port)
            if warning:
                log.warning("%s", warning)
            await server.serve(sockets=[sock])
    finally:
        db.close()


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    configure_events(sys.stderr)
    # httpx logs every request line at INFO; the app logs what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
