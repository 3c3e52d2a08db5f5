"""Start the plugin and a local Dee Wan, install the plugin, and say where to click.

Run from the repository root as `python -m scripts.dev` (what `scripts/dev` does).
Ctrl-C (SIGINT) or SIGTERM stops both processes and exits with status 0, at any
moment once this module runs: its handlers are in place before the slow imports.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scripts.devstack import DevStack


class Stop(Exception):
    """Ctrl-C or SIGTERM: stop both processes and exit cleanly."""


class StopSignals:
    """The first SIGINT or SIGTERM raises Stop; later ones are ignored, so stopping is never
    cut short. While a process is being spawned the signal waits until that process is on
    the stack's list: raised inside `Popen`, it would leave the new process running alone.

    `requested` stays true once a signal came: a Stop raised where Python ignores exceptions
    (an import lock's callback, a finaliser) is lost, and the signal must not be."""

    def __init__(self) -> None:
        self._spawning = False
        self._pending = False
        self.requested = False

    def install(self) -> StopSignals:
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self._spawning:
            self._pending = True
        else:
            self.stop()

    def stop(self) -> None:
        self.ignore()
        raise Stop

    @staticmethod
    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    @contextlib.contextmanager
    def spawning(self) -> Iterator[None]:
        self._spawning = True
        try:
            yield
        finally:
            self._spawning = False
        if self._pending:
            self.stop()


def banner(stack: DevStack, installation: dict[str, Any]) -> str:
    made = "made now with fresh secrets" if stack.vars_created else "kept as it was"
    if stack.reused:
        how = "the last run's, with its schedules and its token"
        if stack.rotated:
            how = f"the last run's, with its schedules; token rotated: {stack.rotated}"
    elif stack.replaced:
        how = f"installed now (the plugin's database no longer held {stack.replaced})"
    else:
        how = "installed now"
    retired = "".join(f"  retired    {line}\n" for line in stack.retired)
    return f"""
Open {stack.core_origin}/ and press "Schedule ({installation["id"]})" on a content item.

  plugin     {stack.plugin_origin}, ticks at the start of every minute
  tick now   "Run the tick now" on that page, or curl "{stack.tick_url}"
  installed  {installation["id"]}, {how}
{retired}  secrets    {stack.vars_path} ({made})
  database   {stack.db_path}
  Dee Wan    {stack.core_state_path} (the local Dee Wan's content and installations)
Ctrl-C stops both; the next run carries on with the same state.
"""


def main(argv: list[str] | None = None) -> int:
    signals = StopSignals().install()
    try:
        # Here, after the handlers: a Ctrl-C during these imports is a clean stop too.
        from scripts.devstack import DevStack, DevStackError, PortInUse
    except Stop:
        return 0
    parser = argparse.ArgumentParser(prog="scripts/dev", description=__doc__)
    parser.add_argument("--plugin-port", type=int, default=8788, help="the plugin's (8788)")
    parser.add_argument("--core-port", type=int, default=8787, help="the local Dee Wan's (8787)")
    parser.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="keep the plugin's SQLite file, the local Dee Wan's state and .dev.vars in DIR "
        "(default: .wrangler/dev/ and the repo root's .dev.vars)",
    )
    args = parser.parse_args(argv)
    stack = DevStack(
        plugin_port=args.plugin_port,
        core_port=args.core_port,
        state_dir=args.state_dir.resolve() if args.state_dir else None,
        spawning=signals.spawning,
    )
    try:
        stack.start()
        print(banner(stack, stack.install()), flush=True)
        while not (ended := stack.exited()) and not signals.requested:
            time.sleep(0.5)
        if signals.requested:
            return 0
        print(f"scripts/dev: {ended}; stopping.", file=sys.stderr)
        return 1
    except Stop:
        return 0
    except DevStackError as exc:
        if signals.requested:
            # A Ctrl-C reaches the whole group: a child it stopped mid-start is not a failure.
            return 0
        print(f"scripts/dev: {exc}", file=sys.stderr)
        if isinstance(exc, PortInUse):
            print("Choose other ports with --plugin-port and --core-port.", file=sys.stderr)
        return 1
    finally:
        signals.ignore()
        stack.stop()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stop:  # a signal in the instant between two handlers
        sys.exit(0)
