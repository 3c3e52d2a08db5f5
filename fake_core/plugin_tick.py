"""The home page's "Run the tick now": ask the plugin, server to server, to run one tick.

The plugin runs a tick on `POST /__scheduled?cron=…` in development only. It
refuses a fetch a web page makes, so the button posts to this server, which
calls the URL it was started with (`--plugin-tick-url`, set by `scripts/dev`)
and says in the notice what the tick sent.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fake_core.context import Context
from fake_core.operator_codes import UNREACHABLE
from fake_core.wire import is_id, parse_json_object

# What the tick's report counts, as the plugin answers it (`{"code": "tick_finished", "report"}`).
_COUNTS = ("sends", "completed", "refused", "retrying", "refused_unsent", "refused_unsent_late")


class TickNotRun(Exception):
    """Why no tick ran, in plain words."""


async def run_tick(ctx: Context) -> str:
    """The notice: what the tick sent, or why it did not run."""
    url = ctx.plugin_tick_url
    if url is None:
        raise TickNotRun(
            "This local Dee Wan was not told where the plugin's tick trigger is "
            "(start it with --plugin-tick-url)."
        )
    caller = ctx.tick_caller or ctx.core.plugin_caller
    if caller is None:
        raise TickNotRun("This local Dee Wan has no way to call the plugin.")
    target = urlsplit(url)
    plugin = f"{target.scheme}://{target.netloc}"
    try:
        status, _, body = await caller("POST", url, {"accept": "application/json"}, None)
    except UNREACHABLE as exc:
        raise TickNotRun(
            f"Could not reach the plugin at {plugin} to run a tick ({type(exc).__name__})."
        ) from None
    answer = parse_json_object(body)
    report = answer.get("report") if answer is not None else None
    if status == 200 and answer is not None and answer.get("code") == "tick_finished":
        counts = _counts(report)
        if counts is not None:
            return _said(counts)
        raise TickNotRun(f"The plugin at {plugin} answered 200 without a tick report.")
    code = answer.get("code") if answer is not None else None
    shown = f", code {code}" if is_id(code) else ""
    hint = " (it runs one only with ENVIRONMENT=development)" if status == 404 else ""
    raise TickNotRun(f"The plugin at {plugin} did not run a tick{hint}: status {status}{shown}.")


def _counts(report: Any) -> dict[str, int] | None:
    if not isinstance(report, dict):
        return None
    counts: dict[str, int] = {}
    for name in _COUNTS:
        number = report.get(name)
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            return None
        counts[name] = number
    return counts


def _said(counts: dict[str, int]) -> str:
    sent = counts["sends"]
    unsent = counts["refused_unsent"] + counts["refused_unsent_late"]
    if sent == 0 and unsent == 0:
        return "The plugin ran a tick: nothing was due, so nothing was sent."
    words = f"The plugin ran a tick: {sent} {'command' if sent == 1 else 'commands'} sent"
    if sent:
        words += (
            f" ({counts['completed']} completed, {counts['refused']} refused, "
            f"{counts['retrying']} to be tried again)"
        )
    if unsent:
        words += f"; {unsent} ended without being sent (too late, or the token is unreadable)"
    return words + (". See Transitions received below." if sent else ".")
