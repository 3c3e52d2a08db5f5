"""Rendering whole pages as responses."""

from __future__ import annotations

from typing import Any

from ..responses import Response, html_response
from .guards import Refusal
from .templates import render


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


def refusal_page(refusal: Refusal) -> Response:
    titles = {
        401: "Please open Scheduling from Dee Wan",
        403: "Not allowed",
        404: "Not found",
        409: "Not possible right now",
        503: "Scheduling cannot reach Dee Wan",
    }
    return error_page(
        refusal.status,
        refusal.code,
        "Please reload the page"
        if refusal.code == "csrf_failed"
        else titles.get(refusal.status, "Something went wrong"),
        refusal.message,
        relaunch=refusal.relaunch,
    )
