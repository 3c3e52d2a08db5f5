"""Rendering whole pages as responses."""

from __future__ import annotations

from typing import Any

from scheduling.http.pages.templates import render
from scheduling.http.refusals import Refusal
from scheduling.http.responses import Response, html_response


def page(name: str, status: int = 200, **context: Any) -> Response:
    context.setdefault("person_name", None)
    return html_response(render(name, **context), status)


def error_page(
    status: int,
    code: str,
    title: str,
    message: str,
    *,
    relaunch: bool = False,
    person_name: str | None = None,
) -> Response:
    return page(
        "error.html",
        status,
        title=title,
        code=code,
        message=message,
        relaunch=relaunch,
        person_name=person_name,
    )


_TITLES = {
    400: "This request cannot be used",
    401: "Please open Scheduling from Dee Wan",
    403: "Not allowed",
    404: "Not found",
    405: "Not possible here",
    409: "Not possible right now",
    503: "Scheduling cannot reach Dee Wan",
}


def refusal_page(refusal: Refusal) -> Response:
    """The page for a refusal on a browser route; its `data-error-code` is the refusal's code."""
    if refusal.title:
        title = refusal.title
    elif refusal.code == "csrf_failed":
        title = "Please reload the page"
    else:
        title = _TITLES.get(refusal.status, "Something went wrong")
    return error_page(
        refusal.status, refusal.code, title, refusal.message, relaunch=refusal.relaunch
    )
