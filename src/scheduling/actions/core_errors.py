"""What a person is told when Dee Wan refused, was unreachable or was not trusted: the one
place a `CoreError` becomes a refusal with a status."""

from __future__ import annotations

from scheduling.dee_wan import CONTENT_READ, LAUNCH_EXCHANGE, UNAVAILABLE, CoreError
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.refusals import Refusal
from scheduling.domain.wording import explain

NOT_OPENED = "Could not open Scheduling"
NOT_ANSWERING = "Dee Wan is not answering right now"
# Dee Wan down or slow is temporary: 503 with a hint of when to try again.
RETRY_AFTER_S = 60


def _unavailable(message: str, *, relaunch: bool) -> Refusal:
    return Refusal(
        503,
        UNAVAILABLE,
        message,
        relaunch=relaunch,
        title=NOT_ANSWERING,
        headers=(("retry-after", str(RETRY_AFTER_S)),),
    )


# A content read answered off the protocol: nothing was sent, so the words are the read's.
_GARBLED_READ = (
    "Dee Wan answered about this content in a way its plugin protocol does not allow (a"
    " garbled or unexpected answer), so the page cannot be shown. Nothing was changed; try"
    " again, and if it keeps happening, tell the plugin's operator."
)


def read_refusal(error: CoreError) -> Refusal:
    """A content read failed: its code, with the status and words a page shows for it."""
    if error.code == UNAVAILABLE:
        return _unavailable(explain(UNAVAILABLE), relaunch=False)
    if error.code == UNTRUSTED:
        return Refusal(502, UNTRUSTED, _GARBLED_READ)
    return Refusal(
        CONTENT_READ.statuses.get(error.code, 403),
        error.code,
        explain(error.code),
        relaunch=error.code == "plugin_unauthorized",
    )


def launch_refusal(error: CoreError) -> Refusal:
    """A launch exchange failed: Dee Wan did not confirm it (401), or is not answering (503)."""
    if error.code == UNAVAILABLE:
        # The launch code is never offered again (it would be in a link): Dee Wan mints
        # another when Scheduling is opened from there.
        return _unavailable(
            "Dee Wan is not answering right now, so Scheduling could not check who opened it"
            " and cannot show this site's schedules yet. Nothing was changed, and waiting"
            " schedules are still sent at their time. Try again in a minute.",
            relaunch=True,
        )
    return Refusal(
        401,
        error.code,
        LAUNCH_EXCHANGE.told.get(error.code, "Dee Wan did not confirm this launch."),
        title=NOT_OPENED,
        relaunch=True,
    )
