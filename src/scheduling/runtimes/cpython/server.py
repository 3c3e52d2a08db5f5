"""The local runtime: the same App on sqlite3, `cryptography`, httpx and uvicorn."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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

# A request line and headers larger than this are refused by h11 with a 400.
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
        host="127.0.0.1",
        port=port,
        http=timed_h11_protocol(header_timeout_s),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=5,
        lifespan="off",
        # Access logs would print query strings, and launch codes travel in one.
        access_log=False,
        log_level="warning",
    )


async def serve(port: int, db_path: Path, env: Mapping[str, Any], *, cron: bool) -> None:
    config = Configuration.from_mapping(env)
    config.raise_for_problems()
    db = SqliteDatabase(db_path)
    applied = apply_migrations(db.connection)
    log.info("database %s: %d migration(s) applied", db_path, len(applied))
    app = build_app(env, db)

    async def tick(when: int | None) -> Any:
        return await app.tick(when if when is not None else app.services.clock.now_ms())

    server = uvicorn.Server(server_config(AsgiApp(app, tick), port))
    cron_task = asyncio.create_task(cron_loop(app)) if cron else None
    log.info(
        "serving %s on http://127.0.0.1:%d (cron %s)",
        config.public_origin,
        port,
        "on" if cron else "off",
    )
    try:
        await server.serve()
    finally:
        if cron_task:
            cron_task.cancel()
        db.close()


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    events.configure(sys.stderr)
    # httpx logs every request line at INFO; the app logs what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
