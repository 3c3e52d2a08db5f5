"""A refusal: the request may not go on, and whoever sent it is told why in plain words.

Actions, guards and handlers raise it; `App.handle` renders it in one place, as JSON
(`{"code", "message"}`) on the protocol and operator routes and as the error
page (with its `data-error-code`) on the browser routes. Anything else a
handler raises is a bug: a 500 `internal_error`, logged once.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.domain.wording import explain


class Refusal(Exception):
    """`status` and `code` say what happened; `message` says it to a person.

    `relaunch` adds the advice to open Scheduling again from Dee Wan (the
    session or the launch can no longer be used). `title` replaces the page
    heading chosen from the status, and `headers` go on the response as they
    are (`WWW-Authenticate`, `Allow`). `resend` keeps a refused form: its fields,
    which the page posts again, as they were, with one button (a form refused for
    now, such as one sent too often).
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
        resend: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message
        self.relaunch = relaunch
        self.title = title
        self.headers = tuple(headers)
        self.resend = tuple(resend)

    @classmethod
    def too_many(
        cls,
        code: str,
        why: str,
        wait_s: int,
        *,
        title: str,
        then: str = "try again",
        resend: Sequence[tuple[str, str]] = (),
    ) -> Refusal:
        """429: `why`, how long to wait in words and in `Retry-After` (seconds)."""
        return cls(
            429,
            code,
            f"{why} Wait {wait_s} second{'s' if wait_s != 1 else ''}, then {then}.",
            title=title,
            headers=[("retry-after", str(wait_s))],
            resend=resend,
        )

    @classmethod
    def explained(cls, status: int, code: str, *, relaunch: bool = False) -> Refusal:
        """A refusal whose message is the code's plain words (`domain/wording.py`)."""
        return cls(status, code, explain(code), relaunch=relaunch)


def invalid_request(message: str) -> Refusal:
    """A request whose bytes are not what the route takes: 400 `invalid_request`."""
    return Refusal(400, "invalid_request", message)
