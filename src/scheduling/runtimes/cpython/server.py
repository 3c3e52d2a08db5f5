"""The local runtime: the same App on sqlite3, `cryptography`, httpx and uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import resource
import shlex
import socket
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from scheduling import events
from scheduling.app import App
from scheduling.config import Configuration
from scheduling.runtimes.cpython import repeated_logs
from scheduling.runtimes.cpython.asgi import AsgiApp, app_tick
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.clock_processes import ClockProcesses
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.http_client import HttpxClient, outbound_client
from scheduling.runtimes.cpython.local_clocks import LocalClocks
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.slow_clients import HEADER_TIMEOUT_S, timed_h11_protocol
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.runtimes.cpython.stop_signals import StopSignals
from scheduling.services import Services, log

# A request line and headers larger than this are refused with a 400, however they arrive.
MAX_HEAD_BYTES = 16 * 1024
HOST = "127.0.0.1"
LISTEN_BACKLOG = 2048

# Open files, counted against the process's limit (RLIMIT_NOFILE): what is not a connection
# of a client (standard streams, the event loop's, the database's three files, the listening
# socket, imports) and each outbound pool at its fullest.
BASE_FILES = 32
OUTBOUND_CONNECTIONS = 100  # Dee Wan's calls and the runner's (httpx's default pool)
VISITOR_CONNECTIONS = 16  # calls a visitor can trigger: test events
# The most inbound connections held at once, whatever the limit allows, and the fewest
# worth starting with.
MAX_CONNECTIONS = 1_000
MIN_CONNECTIONS = 16
# Connections accepted in one go before any is looked at (asyncio accepts up to the
# server's backlog at once), so the cap leaves room for one such burst.
ACCEPT_BURST = 128


@dataclass(frozen=True)
class Connections:
    """How many client connections `serve` holds at once, and accepts in one go."""

    cap: int = MAX_CONNECTIONS
    accept_burst: int = ACCEPT_BURST

    @classmethod
    def within(cls, file_limit: int | None = None) -> Connections:
        """Below the open-file limit (this process's, by default), with room for the outbound
        pools and one burst of accepts, and at most `MAX_CONNECTIONS`."""
        if file_limit is None:
            file_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        outbound = OUTBOUND_CONNECTIONS + VISITOR_CONNECTIONS
        room = file_limit - BASE_FILES - outbound
        burst = max(1, min(ACCEPT_BURST, room // 4))
        cap = min(MAX_CONNECTIONS, room - burst)
        if cap < MIN_CONNECTIONS:
            raise StartupError(
                f"the open-file limit ({file_limit}) leaves room for {max(cap, 0)} connections:"
                f" raise it (ulimit -n 1024)"
            )
        return cls(cap, burst)


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


def attach_clocks(
    app: App, *, processes: int = 1, env: Mapping[str, Any] | None = None
) -> LocalClocks | ClockProcesses | None:
    """With SCHEDULE_CLOCK=1, an alarm clock per installation, as a Worker with the
    `SCHEDULE_CLOCK` binding has; the cron's tick is then their watchdog. Else None. With
    `processes` above 1 (and a database file), the clocks run across that many child
    processes (`clock_processes.py`), each told `env`; else in this process. The caller
    starts and stops them."""
    if not app.services.config.schedule_clock:
        return None
    db = app.services.db
    clocks: LocalClocks | ClockProcesses
    if processes > 1 and isinstance(db, SqliteDatabase) and db.path != ":memory:":
        clocks = ClockProcesses(processes, db.path, {k: str(v) for k, v in (env or {}).items()})
    else:
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


def server_config(
    asgi: AsgiApp,
    port: int,
    *,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    connections: Connections | None = None,
) -> uvicorn.Config:
    """uvicorn on 127.0.0.1, with deadlines for slow clients (the body's is in `asgi`) and a
    cap on connections below the open-file limit."""
    connections = connections or Connections.within()
    return uvicorn.Config(
        asgi,
        host=HOST,
        port=port,
        http=timed_h11_protocol(
            header_timeout_s, max_head_bytes=MAX_HEAD_BYTES, max_connections=connections.cap
        ),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        backlog=connections.accept_burst,
        timeout_keep_alive=5,
        lifespan="off",
        # Access logs would print query strings, and launch codes travel in one.
        access_log=False,
        # The client is the peer address. uvicorn would otherwise believe X-Forwarded-For
        # from a loopback peer, and every peer of 127.0.0.1 is one: each failed launch
        # could then claim to come from a new client.
        proxy_headers=False,
        log_level="warning",
        # uvicorn's lines go through the process's handlers, where a repeated failure is
        # written once per interval (`repeated_logs.py`).
        log_config=None,
    )


class StartupError(Exception):
    """The local server cannot start; the message says why in one line."""


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
    clock_processes: int = 1,
) -> list[str]:
    """What the server prints once it listens: where, and how to ask the runner how it is."""
    base = f"http://{HOST}:{port}"
    if secret_in_environment or vars_path is None:
        secret = "$ADMIN_SECRET"  # noqa: S105 - the shell variable's name, shown in a hint
    else:
        secret = f"$(sed -n 's/^ADMIN_SECRET=//p' {shlex.quote(str(vars_path))})"
    clocks = ", an alarm clock per installation" if config.schedule_clock else ""
    if clocks and clock_processes > 1:
        clocks += f" in {clock_processes} clock processes"
    lines = [
        f"serving {config.public_origin} on {base} (cron {'on' if cron else 'off'}{clocks})",
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
    stop: StopSignals,
    vars_path: Path | None = None,
    secret_in_environment: bool = False,
    clock_processes: int = 1,
) -> None:
    """Serve until `stop` hears SIGINT or SIGTERM; then stop the cron task and close what was
    opened. A signal heard during start-up stops it before its next stage.

    Raises ConfigurationError or StartupError, before anything is served, when it cannot start.
    """
    config = Configuration.from_mapping(env)
    config.raise_for_problems()
    connections = Connections.within()
    if not stop.heard:
        db = open_database(db_path)
        try:
            if not stop.heard:
                banner_lines = partial(
                    banner,
                    config,
                    cron=cron,
                    vars_path=vars_path,
                    secret_in_environment=secret_in_environment,
                    clock_processes=clock_processes,
                )
                await _listen_and_serve(
                    port,
                    db,
                    env,
                    stop,
                    cron=cron,
                    banner_lines=banner_lines,
                    connections=connections,
                    clock_processes=clock_processes,
                )
        finally:
            db.close()
    log.info("stopped")


async def _listen_and_serve(
    port: int,
    db: SqliteDatabase,
    env: Mapping[str, Any],
    stop: StopSignals,
    *,
    cron: bool,
    banner_lines: Callable[[int], list[str]],
    connections: Connections,
    clock_processes: int = 1,
) -> None:
    sock = listen(port)
    try:
        if stop.heard:
            return
        port = sock.getsockname()[1]
        public_only = not Configuration.from_mapping(env).is_development
        http = outbound_client(max_connections=OUTBOUND_CONNECTIONS, public_only=public_only)
        visitor_http = outbound_client(max_connections=VISITOR_CONNECTIONS, public_only=public_only)
        app = build_app(env, db, http=http, visitor_http=visitor_http)
        clocks = attach_clocks(app, processes=clock_processes, env=env)
        if clocks is not None:
            armed = await clocks.start()
            log.info("alarm clocks armed from D1 (installations with something live): %d", armed)
        server = _Server(server_config(AsgiApp(app, app_tick(app)), port, connections=connections))
        repeated = asyncio.create_task(_say_repeated_failures())
        stop.on_stop(server.stop)  # at once, if a signal came since the last look
        for line in banner_lines(port):
            log.info("%s", line)
        warning = origin_port_warning(app.services.config.public_origin, port)
        if warning:
            log.warning("%s", warning)
        cron_task = asyncio.create_task(cron_loop(app)) if cron else None
        try:
            await server.serve(sockets=[sock])
            await server.end_requests()
        finally:
            if cron_task is not None:
                # A tick under way stops at its next wait; sends already out are settled.
                cron_task.cancel()
                await asyncio.gather(cron_task, return_exceptions=True)
            if clocks is not None:
                await clocks.stop()
            await http.aclose()
            await visitor_http.aclose()
            repeated.cancel()
            await asyncio.gather(repeated, return_exceptions=True)
    finally:
        sock.close()


async def _say_repeated_failures() -> None:
    """Every interval, and once more at the end, what a flood repeated and was not written."""
    once = repeated_logs.install()
    try:
        while True:
            await asyncio.sleep(once.interval_s)
            once.flush()
    finally:
        once.flush(everything=True)


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handling: `serve` hears SIGINT and SIGTERM
    from its first line (`StopSignals`) and tells the server to stop. (uvicorn would also
    raise the signal again once stopped, and `serve` still has to close what it opened.)"""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self, times: int) -> None:
        """Stop serving: checked after start-up and every 0.1 s. A second signal stops waiting
        for open connections and running requests."""
        self.should_exit = True
        if times > 1:
            self.force_exit = True

    async def end_requests(self) -> None:
        """After a forced stop, end what is still under way before the database closes: close
        the connections (a request waiting for its body ends as a disconnect, unanswered),
        then cancel what still runs."""
        running = set(self.server_state.tasks)
        if not running:
            return
        for connection in list(self.server_state.connections):
            connection.transport.close()
        _, left = await asyncio.wait(running, timeout=1)
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    events.configure(sys.stderr)
    # httpx logs every request line at INFO; the app logs what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
