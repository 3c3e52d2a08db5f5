"""`python -m scheduling serve`: the same App on sqlite3, `cryptography`, httpx and uvicorn
(with its own settings), on 127.0.0.1, for development and tests.

Before anything is served, `serve` checks the variables, opens the database and binds the
port; each failure is a `StartupError` in one line. While it serves, its lifespan keeps the
cron's minute tick and, with SCHEDULE_CLOCK=1, an alarm clock per installation
(`LocalClocks`), in process, as a Worker has one Durable Object per installation.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shlex
import socket
import sqlite3
import ssl
import stat
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

from scheduling.app import App
from scheduling.config import RENAMED, SECRETS, VARIABLES, Configuration
from scheduling.domain.schedules import wake_for
from scheduling.limits import MAX_STORED_INTEGER, VISITOR_CONNECTIONS
from scheduling.ports import HttpClient, configure_events
from scheduling.repository.leases import read_wake_ups, wake_ups_from
from scheduling.runner.alarm import AlarmClock
from scheduling.runtimes.cpython.adapters import (
    CpythonCrypto,
    HttpxClient,
    SystemClock,
    outbound_client,
)
from scheduling.runtimes.cpython.asgi import AsgiApp, app_tick
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from scheduling.services import Services, log

HOST = "127.0.0.1"


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
    """The database and its -wal and -shm hold CSRF tokens, names and sealed tokens: a new one
    is created 0600 (SQLite gives the others its mode), one readable by others made so."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
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


# -- the alarm clocks -----------------------------------------------------------------------
# Each alarm is a timer on the event loop, run by the core's clock logic (`runner/alarm.py`) as
# Durable Objects run theirs: setting it replaces it, a time in the past fires at once, one
# alarm runs at a time per installation (a wake-up meanwhile waits for it), each with its own
# HTTP client's connections. Timers live as long as the process: `start()` arms them from D1.


class _Clock:
    """An installation's clock: its alarm, a loop timer that calls `fire(due)` when it comes
    (the `AlarmStore` of the core's `AlarmClock`), the alarm running, its HTTP client."""

    def __init__(self, now: Callable[[], int], fire: Callable[[int], None]) -> None:
        self.now = now
        self.fire = fire
        self.at: int | None = None
        self.due = 0  # when it should come: its time, or when it was set if that is later
        self._timer: asyncio.TimerHandle | None = None
        self.clock = AlarmClock(self, now)
        self.http: HttpClient | None = None
        self.ringing: asyncio.Task[None] | None = None
        self.waiting: int | None = None  # a wake-up that came while it rang

    async def get_alarm(self) -> int | None:
        return self.at

    async def set_alarm(self, at: int) -> None:
        self.cancel()
        self.at = at
        self.due = max(at, self.now())  # a time in the past comes at once
        self._wait_for(at)

    def _wait_for(self, at: int) -> None:
        delay_s = max(0, at - self.now()) / 1000
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._come)

    def _come(self) -> None:
        at = self.at
        if at is None:
            return
        if self.now() < at:  # a loop timer may come a millisecond before the clock's time
            self._wait_for(at)
            return
        self.at, self._timer = None, None  # consumed: the alarm runs now
        self.fire(self.due)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.at, self._timer = None, None


class LocalClocks:
    """The `ScheduleClocks` port of the local runtime, over `app`'s database and settings."""

    def __init__(self, app: App, *, http: Callable[[], HttpClient] | None = None) -> None:
        """`http` makes each installation's client; by default an `outbound_client` each,
        closed by `stop()`."""
        self.services = app.services
        self._make_http = http or self._client
        self._tls: ssl.SSLContext | None = None  # one for every installation's client
        self._clocks: dict[str, _Clock] = {}

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        return await self._clock(installation_id).clock.arm(wake_at)

    async def start(self) -> int:
        """Arm every installation with something live, from D1; returns how many."""
        rows = await read_wake_ups(self.services.db, MAX_STORED_INTEGER).all()
        lead = self.services.config.clock_lead_ms
        found = wake_ups_from(rows.results)
        for installation_id, due_at in found.items():
            await self.arm(installation_id, wake_for(due_at, lead))
        return len(found)

    async def stop(self) -> None:
        """Stop every timer and every alarm under way (a send already out is abandoned to its
        lease, as a killed isolate's would be); close the clients."""
        running = []
        for clock in self._clocks.values():
            clock.cancel()
            if clock.ringing is not None:
                clock.ringing.cancel()
                running.append(clock.ringing)
        await asyncio.gather(*running, return_exceptions=True)
        for clock in self._clocks.values():
            if isinstance(clock.http, HttpxClient):
                await clock.http.aclose()
        self._clocks.clear()

    async def idle(self) -> None:
        """Until no alarm is running (for tests and benchmarks)."""
        while running := [c.ringing for c in self._clocks.values() if c.ringing is not None]:
            await asyncio.gather(*running, return_exceptions=True)

    def next_wake_ups(self) -> dict[str, int]:
        """installation -> when its clock is set for (those set only)."""
        return {i: c.at for i, c in self._clocks.items() if c.at is not None}

    def _clock(self, installation_id: str) -> _Clock:
        clock = self._clocks.get(installation_id)
        if clock is None:
            fire = partial(self.wake, installation_id)
            clock = self._clocks[installation_id] = _Clock(self.services.clock.now_ms, fire)
        return clock

    def wake(self, installation_id: str, set_for: int) -> None:
        """An alarm came: ring the clock, or after the alarm it is running."""
        clock = self._clock(installation_id)
        if clock.ringing is not None:
            clock.waiting = set_for if clock.waiting is None else min(clock.waiting, set_for)
            return
        clock.ringing = asyncio.create_task(
            self._ring(installation_id, clock, set_for), name=f"alarm-{installation_id}"
        )

    async def _ring(self, installation_id: str, clock: _Clock, set_for: int) -> None:
        try:
            await clock.clock.ring(lambda: self._alarm(installation_id, clock, set_for))
        except Exception:
            log.exception("installation %s: its alarm failed; it is retried", installation_id)
        finally:
            clock.ringing = None
        if clock.waiting is not None:
            waiting, clock.waiting = clock.waiting, None
            self.wake(installation_id, waiting)

    def _client(self) -> HttpxClient:
        """Its own connections, as an alarm has on Workers (six at once)."""
        self._tls = self._tls or httpx.create_ssl_context()
        public_only = not self.services.config.is_development
        return outbound_client(max_connections=6, public_only=public_only, tls=self._tls)

    async def _alarm(self, installation_id: str, clock: _Clock, set_for: int) -> int | None:
        if clock.http is None:
            clock.http = self._make_http()
        own = App(replace(self.services, http=clock.http))
        return await own.alarm(installation_id, set_for)


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
    """With SCHEDULE_CLOCK=1, an alarm clock per installation (the cron's tick is then their
    watchdog), for the caller to start and stop; else None."""
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
        timeout_graceful_shutdown=5,  # then requests still under way are cancelled
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
    """Serve until uvicorn hears Ctrl-C or SIGTERM. Raises ConfigurationError or StartupError,
    before anything is served, when it cannot start."""
    config = Configuration.from_mapping(env)
    config.raise_for_problems()
    db = open_database(db_path)
    try:
        with listen(port) as sock:
            port = sock.getsockname()[1]
            public_only = not config.is_development
            http = outbound_client(public_only=public_only)
            visitor = outbound_client(max_connections=VISITOR_CONNECTIONS, public_only=public_only)
            app = build_app(env, db, http=http, visitor_http=visitor)
            lifespan = partial(running, app, cron=cron, clients=(http, visitor))
            server = uvicorn.Server(server_config(AsgiApp(app, app_tick(app), lifespan), port))
            for line in banner(config, port, cron, vars_path, secret_in_environment):
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
