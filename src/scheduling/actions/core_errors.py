"""What a person is told when Dee Wan refused, was unreachable or was not trusted: the one
place a `CoreError` becomes a refusal with a status."""

from __future__ import annotations

from scheduling.dee_wan import CoreError
from scheduling.domain.refusals import Refusal
from scheduling.domain.wording import explain

NOT_OPENED = "Could not open Scheduling"

# The status each code answers with when a page's content read fails (§5).
_READ_STATUS = {
    "dee_wan_unreachable": 502,
    "untrusted_response": 502,
    "plugin_unauthorized": 401,
    "content_not_found": 404,
    "requester_unauthorized": 403,
    "capability_refused": 403,
}
_LAUNCH_MESSAGES = {
    "launch_not_found": "This launch link was already used or has expired (links last 60 seconds).",
    "plugin_unauthorized": explain("plugin_unauthorized"),
    "dee_wan_unreachable": explain("dee_wan_unreachable"),
}


def read_refusal(error: CoreError) -> Refusal:
    """A content read failed: its code, with the status and words a page shows for it."""
    return Refusal(
        _READ_STATUS.get(error.code, 403),
        error.code,
        explain(error.code),
        relaunch=error.code == "plugin_unauthorized",
    )


def launch_refusal(error: CoreError) -> Refusal:
    """A launch exchange failed: Dee Wan did not confirm it, or could not be reached (502)."""
    return Refusal(
        502 if error.code == "dee_wan_unreachable" else 401,
        error.code,
        _LAUNCH_MESSAGES.get(error.code, "Dee Wan did not confirm this launch."),
        title=NOT_OPENED,
        relaunch=True,
    )
