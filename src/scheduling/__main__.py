"""`python -m scheduling serve --port 8788 --db PATH --vars FILE [--no-cron]`, and
`python -m scheduling contract` (prints the plugin contract core checks)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

# The file ships beside this module; reading it needs none of the runtime's dependencies.
CONTRACT = Path(__file__).with_name("plugin-contract.json")

EXAMPLE = """example, from the repository root:
  .venv/bin/python -m scheduling serve --port 8788 --db plugin.sqlite3 --vars .dev.vars
(`bash scripts/dev` runs it for you, with a local Dee Wan.)"""


def _port(value: str) -> int:
    from scheduling.http.requests import ascii_int

    port = ascii_int(value, max_digits=5)
    if port is None or port > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0-65535)")
    return port


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

    # SIGTERM stops `serve` as Ctrl-C does: uvicorn hears both while it serves, and before
    # or after that either one unwinds what was opened (KeyboardInterrupt).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        code = _serve(args)
    except KeyboardInterrupt:
        code = 0
    if code == 0:
        logging.getLogger("scheduling").info("stopped")
    return code


def _serve(args: argparse.Namespace) -> int:
    # Imported here so `--help` and `contract` work before the CPython extra is installed.
    import asyncio

    from scheduling.config import ConfigurationError
    from scheduling.runtimes.cpython.server import StartupError, configure_logging, load_vars, serve

    configure_logging()
    try:
        env = load_vars(args.vars)
    except (OSError, ValueError) as exc:
        print(f"scheduling: cannot read {args.vars}: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(
            serve(
                args.port,
                args.db,
                env,
                cron=not args.no_cron,
                vars_path=args.vars,
                secret_in_environment="ADMIN_SECRET" in os.environ,
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
