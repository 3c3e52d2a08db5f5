"""Rendering whole pages as responses: a frozen page model into its template."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Protocol

from scheduling.domain.refusals import Refusal
from scheduling.http.next_steps import NextSteps
from scheduling.http.pages.templates import render
from scheduling.http.responses import Response, html_response


class PageModel(Protocol):
    """A frozen dataclass naming its template; its fields are the template's names."""

    template: ClassVar[str]

    @property
    def person_name(self) -> str | None: ...


def page(model: PageModel, status: int = 200) -> Response:
    context = {field.name: getattr(model, field.name) for field in fields(model)}  # type: ignore[arg-type]
    return html_response(render(model.template, **context), status)


@dataclass(frozen=True)
class ErrorPage:
    template: ClassVar[str] = "error.html"

    title: str
    code: str
    message: str
    relaunch: bool
    steps: NextSteps
    person_name: str | None = None
    # A refused form kept: where it posts, and its fields as they were sent.
    resend_to: str = ""
    resend: tuple[tuple[str, str], ...] = ()


_TITLES = {
    400: "This request cannot be used",
    401: "Please open Scheduling from Dee Wan",
    403: "Not allowed",
    404: "Not found",
    405: "Not possible here",
    409: "Not possible right now",
    503: "Scheduling cannot reach Dee Wan",
}


def refusal_page(refusal: Refusal, steps: NextSteps, path: str = "") -> Response:
    """The page for a refusal on a browser route; its `data-error-code` is the refusal's code,
    and `steps` where the person can go from it. A form it keeps (`resend`) posts to `path`
    again."""
    if refusal.title:
        title = refusal.title
    elif refusal.code == "csrf_failed":
        title = "Please reload the page"
    else:
        title = _TITLES.get(refusal.status, "Something went wrong")
    model = ErrorPage(
        title,
        refusal.code,
        refusal.message,
        refusal.relaunch,
        steps,
        resend_to=path if refusal.resend else "",
        resend=refusal.resend,
    )
    return page(model, refusal.status)
