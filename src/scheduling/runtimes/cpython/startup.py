"""What `serve` checks and opens before it serves: the connections the open-file limit
leaves room for, the database file (owner-only, migrated), the listening socket, whether a
loopback PUBLIC_ORIGIN names the port served, and the lines it prints once it listens. Each
failure is a `StartupError` in one line, raised before anything is served."""

from __future__ import annotations

import ipaddress
import resource
import shlex
import socket
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from scheduling.config import Configuration
from scheduling.limits import VISITOR_CONNECTIONS
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.services import log

HOST = "127.0.0.1"
LISTEN_BACKLOG = 2048

# Open files, counted against the process's limit (RLIMIT_NOFILE): what is not a connection
# of a client (standard streams, the event loop's, the database's three files, the listening
# socket, imports) and each outbound pool at its fullest.
BASE_FILES = 32
OUTBOUND_CONNECTIONS = 100  # Dee Wan's calls and the runner's (httpx's default pool)
# The most inbound connections held at once, whatever the limit allows, and the fewest
# worth starting with.
MAX_CONNECTIONS = 1_000
MIN_CONNECTIONS = 16
# Connections accepted in one go before any is looked at (asyncio accepts up to the
# server's backlog at once).
ACCEPT_BURST = 128
# How many such bursts can be open before the cap closes a connection for the first of them:
# asyncio accepts a burst in one turn of its loop, makes their transports in the next, calls
# `connection_made` (where the cap closes the oldest) in the one after, and the socket is
# closed in the fourth; the listening socket may be read at every turn. With room for one
# burst only, a flood under load reached the open-file limit ("socket.accept() out of
# system resource", a traceback, and a second without accepting).
BURSTS_IN_FLIGHT = 4


class StartupError(Exception):
    """The local server cannot start; the message says why in one line."""


@dataclass(frozen=True)
class Connections:
    """How many client connections `serve` holds at once, and accepts in one go."""

    cap: int = MAX_CONNECTIONS
    accept_burst: int = ACCEPT_BURST

    @classmethod
    def within(cls, file_limit: int | None = None) -> Connections:
        """Below the open-file limit (this process's, by default), with room for the outbound
        pools and the bursts of accepts in flight, and at most `MAX_CONNECTIONS`."""
        if file_limit is None:
            file_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        outbound = OUTBOUND_CONNECTIONS + VISITOR_CONNECTIONS
        room = file_limit - BASE_FILES - outbound
        burst = max(1, min(ACCEPT_BURST, room // (2 * BURSTS_IN_FLIGHT)))
        cap = min(MAX_CONNECTIONS, room - BURSTS_IN_FLIGHT * burst)
        if cap < MIN_CONNECTIONS:
            raise StartupError(
                f"the open-file limit ({file_limit}) leaves room for {max(cap, 0)} connections:"
                f" raise it (ulimit -n 1024)"
            )
        return cls(cap, burst)


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
