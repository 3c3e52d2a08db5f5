"""A refusal: the request may not go on, and whoever sent it is told why in plain words.

Handlers and guards raise it; `App.handle` renders it in one place, as JSON
(`{"code", "message"}`) on the protocol and operator routes and as the error
page (with its `data-error-code`) on the browser routes. Anything else a
handler raises is a bug: a 500 `internal_error`, logged once.
"""

from __future__ import annotations

from collections.abc import Sequence


class Refusal(Exception):
    """`status` and `code` say what happened; `message` says it to a person.

    `relaunch` adds the advice to open Scheduling again from Dee Wan (the
    session or the launch can no longer be used). `title` replaces the page
    heading chosen from the status, and `headers` go on the response as they
    are (`WWW-Authenticate`, `Allow`).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str = "",
        *,
        relaunch: bool = False,
        title: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message
        self.relaunch = relaunch
        self.title = title
        self.headers = tuple(headers)


def invalid_request(message: str) -> Refusal:
    """A request whose bytes are not what the route takes: 400 `invalid_request`."""
    return Refusal(400, "invalid_request", message)
