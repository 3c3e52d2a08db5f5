"""`python -m scheduling serve --port 8788 --db PATH --vars FILE [--no-cron]`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from scheduling.config import ConfigurationError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduling")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the plugin locally on SQLite")
    serve.add_argument("--port", type=int, default=8788)
    serve.add_argument("--db", type=Path, required=True, help="SQLite file (created if missing)")
    serve.add_argument("--vars", type=Path, required=True, help=".dev.vars-style KEY=VALUE file")
    serve.add_argument("--no-cron", action="store_true", help="do not tick every minute")
    args = parser.parse_args(argv)

    # Imported here so `--help` works before the CPython extra is installed.
    from scheduling.runtimes.cpython.dev_vars import load_vars
    from scheduling.runtimes.cpython.server import configure_logging
    from scheduling.runtimes.cpython.server import serve as run_server

    configure_logging()
    try:
        env = load_vars(args.vars)
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.vars}: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(run_server(args.port, args.db, env, cron=not args.no_cron))
    except ConfigurationError as exc:
        print(f"scheduling: refusing to start, {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
