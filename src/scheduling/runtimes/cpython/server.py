"""The local runtime: the same App on sqlite3, `cryptography`, httpx and uvicorn. `serve`
runs it, once `startup.py` has checked and opened what it needs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import uvicorn

from scheduling import events
from scheduling.app import App
from scheduling.config import Configuration
from scheduling.limits import VISITOR_CONNECTIONS
from scheduling.runtimes.cpython import repeated_logs
from scheduling.runtimes.cpython.asgi import AsgiApp, app_tick
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.clock_processes import ClockProcesses
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.http_client import HttpxClient, outbound_client
from scheduling.runtimes.cpython.local_clocks import LocalClocks
from scheduling.runtimes.cpython.slow_clients import HEADER_TIMEOUT_S, timed_h11_protocol
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.runtimes.cpython.startup import (
    HOST,
    OUTBOUND_CONNECTIONS,
    Connections,
    banner,
    listen,
    open_database,
    origin_port_warning,
)
from scheduling.runtimes.cpython.stop_signals import StopSignals
from scheduling.services import Services, log

# A request line and headers larger than this are refused with a 400, however they arrive.
MAX_HEAD_BYTES = 16 * 1024


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
            header_timeout_s,
            max_head_bytes=MAX_HEAD_BYTES,
            max_connections=connections.cap,
            https=asgi.app.services.config.is_https,
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
