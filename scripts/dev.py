"""Start the plugin and a local Dee Wan, install the plugin, and say where to click."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "src")]

from fake_core.devstack import DevStack  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plugin-port", type=int, default=8788)
    parser.add_argument("--core-port", type=int, default=8787)
    args = parser.parse_args()
    stack = DevStack(plugin_port=args.plugin_port, core_port=args.core_port)
    with stack:
        installation = stack.install()
        print(
            f"""
Scheduling plugin  {stack.plugin_origin}   (installation {installation["id"]})
Local Dee Wan      {stack.core_origin}/    <- open this, then use "Schedule" on a content item

The plugin ticks every minute; to run a tick now:
  curl "{stack.plugin_origin}/__scheduled?cron=*+*+*+*+*"
Operator secret and token key: {stack.state_dir / ".dev.vars"}
Ctrl-C stops both.
""",
            flush=True,
        )
        try:
            while all(p.poll() is None for p in stack.processes):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
