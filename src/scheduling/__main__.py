"""`python -m scheduling serve --port 8788 --db PATH --vars FILE [--no-cron]
[--clock-processes N]`, and
`python -m scheduling contract` (prints the plugin contract core checks)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# The file ships beside this module; reading it needs none of the runtime's dependencies.
CONTRACT = Path(__file__).with_name("plugin-contract.json")

EXAMPLE = """example, from the repository root:
  .venv/bin/python -m scheduling serve --port 8788 --db plugin.sqlite3 --vars .dev.vars
(`bash scripts/dev` runs it for you, with a local Dee Wan.)"""


def _port(value: str) -> int:
    # Imported here: nothing slow is imported before serve's signal handlers are in place.
    from scheduling.http.requests import ascii_int

    port = ascii_int(value, max_digits=5)
    if port is None or port > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0-65535)")
    return port


def cpu_count() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_CLOCK_PROCESSES = 256


def _clock_processes(value: str) -> int:
    if (
        not (value.isascii() and value.isdigit() and len(value) <= 3)
        or int(value) > MAX_CLOCK_PROCESSES
    ):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number of processes (0-{MAX_CLOCK_PROCESSES})"
        )
    return int(value)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scheduling",
        description="The Scheduling plugin's local runtime (CPython, SQLite).",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the plugin locally on SQLite",
        description="Serve the plugin on 127.0.0.1:PORT with a SQLite database.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--port", type=_port, default=8788, help="port on 127.0.0.1 (8788; 0 picks a free one)"
    )
    serve.add_argument(
        "--db",
        type=Path,
        required=True,
        help="SQLite file, created if missing (its folder must exist)",
    )
    serve.add_argument("--vars", type=Path, required=True, help=".dev.vars-style KEY=VALUE file")
    serve.add_argument("--no-cron", action="store_true", help="do not tick every minute")
    serve.add_argument(
        "--clock-processes",
        type=_clock_processes,
        default=cpu_count(),
        metavar="N",
        help="with SCHEDULE_CLOCK=1, run the installations' alarm clocks in N processes, each"
        " the clocks of a fixed set of installations, as Workers give each clock its own"
        f" isolate ({cpu_count()}: the CPU count; 0 or 1: in the server's process)",
    )
    commands.add_parser(
        "contract",
        help="print the plugin contract (plugin-contract.json) core's contract test checks",
        description="Print plugin-contract.json: versions, manifest id, capabilities, secret "
        "shapes and the Runner table, as core's plugin-contract test reads them.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if args.command is None:
        cli.print_help(sys.stderr)
        return 2
    if args.command == "contract":
        sys.stdout.write(CONTRACT.read_text("utf-8"))
        return 0

    # Before anything slow: from here on a SIGINT or SIGTERM asks the server to stop, at
    # whatever point of start-up it comes (StopSignals).
    from scheduling.runtimes.cpython.stop_signals import StopSignals

    stop = StopSignals.install()

    # Imported here so `--help` and `contract` work before the CPython extra is installed.
    import asyncio

    from scheduling.config import ConfigurationError
    from scheduling.runtimes.cpython.dev_vars import load_vars
    from scheduling.runtimes.cpython.server import configure_logging
    from scheduling.runtimes.cpython.server import serve as run_server
    from scheduling.runtimes.cpython.startup import StartupError

    configure_logging()
    try:
        env = load_vars(args.vars)
    except (OSError, ValueError) as exc:
        print(f"scheduling: cannot read {args.vars}: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(
            run_server(
                args.port,
                args.db,
                env,
                cron=not args.no_cron,
                stop=stop,
                vars_path=args.vars,
                secret_in_environment="ADMIN_SECRET" in os.environ,
                clock_processes=args.clock_processes,
            )
        )
    except ConfigurationError as exc:
        print(f"scheduling: refusing to start, {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"scheduling: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
