"""`python -m fake_core --port 8787 [--plugin-origin URL] [--seed demo] [--base-url URL]
[--state FILE] [--plugin-tick-url URL]`.

With FAKE_CORE_PLUGIN_ADMIN_SECRET set (the plugin's operator bearer secret), the
home page also offers one-click "Rotate token" and "Mint a code and install".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path

import httpx

from fake_core.app import FakeCoreApp
from fake_core.core import FakeCore
from fake_core.demo import seed_demo
from fake_core.saved_state import StateFile, StateFileError
from fake_core.server import bound_port, serve
from fake_core.transport import httpx_caller

TICK_TIMEOUT_S = 70.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fake_core", description=__doc__)
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--plugin-origin", default="http://localhost:8788")
    parser.add_argument("--base-url", help="sent at activation (default http://localhost:<port>)")
    parser.add_argument("--seed", choices=["demo"], help="start with a demo site")
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="keep the site, its content and installations in FILE: loaded at start when it "
        "exists (then --seed is not applied), saved after each change",
    )
    parser.add_argument(
        "--plugin-tick-url",
        metavar="URL",
        help="the plugin's development tick trigger, e.g. "
        "http://localhost:8788/__scheduled?cron=*+*+*+*+* ; the home page then has "
        "'Run the tick now'",
    )
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    core = FakeCore("http://localhost")
    state_file = StateFile(args.state) if args.state else None
    saved = state_file.load() if state_file else None
    if saved is not None:
        core.state = saved
    elif args.seed == "demo":
        seed_demo(core)
    async with (
        httpx.AsyncClient(timeout=10.0) as client,
        # A tick answers when it has finished: its budget (45 s) and its last sends.
        httpx.AsyncClient(timeout=TICK_TIMEOUT_S) as tick_client,
    ):
        app = FakeCoreApp(
            core,
            plugin_origin=args.plugin_origin,
            plugin_caller=httpx_caller(client),
            plugin_admin_secret=os.environ.get("FAKE_CORE_PLUGIN_ADMIN_SECRET"),
            state_file=state_file,
            plugin_tick_url=args.plugin_tick_url,
            tick_caller=httpx_caller(tick_client),
        )
        server = await serve(app, args.host, args.port)
        port = bound_port(server)
        core.base_url = (args.base_url or f"http://localhost:{port}").rstrip("/")
        if state_file is not None:
            state_file.save(core.state)  # a new file exists from the start
        kept = "" if state_file is None else f"; state in {state_file.path}"
        if saved is not None:
            kept += " (as it was left)"
        print(
            f"fake Dee Wan core on http://{args.host}:{port} (base_url {core.base_url}){kept}",
            flush=True,
        )
        async with server:
            await server.serve_forever()


if __name__ == "__main__":
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main())
    except StateFileError as exc:
        sys.exit(f"python -m fake_core: {exc}")
