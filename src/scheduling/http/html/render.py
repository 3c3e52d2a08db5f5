"""Rendering whole pages as responses: a frozen page model into its template.

The templates are compiled ahead of time (`compiled_templates.py`, from `templates.py`):
one jinja2 Environment builds each Template from its compiled function, all of them when
this module is imported, so that neither the Worker's top level nor any request lexes or
parses a template.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol

import jinja2

from scheduling.domain.refusals import Refusal
from scheduling.http.html.compiled_templates import TEMPLATES
from scheduling.http.next_steps import NextSteps
from scheduling.http.responses import Response, html_response
from scheduling.repository.sessions import Session


class _Compiled(jinja2.BaseLoader):
    """Templates from their compiled functions; `{% extends %}` and imports come here too."""

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        if name not in TEMPLATES:
            raise jinja2.TemplateNotFound(name)
        namespace: dict[str, Any] = TEMPLATES[name](environment)
        return environment.template_class.from_module_dict(
            environment, namespace, environment.make_globals(globals)
        )


# The options the templates were compiled with (scripts/compile_templates.py; a test keeps
# both alike): trimming, autoescaping and strict names shape the compiled code.
_ENVIRONMENT = jinja2.Environment(
    loader=_Compiled(),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
for _name in TEMPLATES:  # each built once, here: the Environment caches them
    _ENVIRONMENT.get_template(_name)


def render(name: str, **context: Any) -> str:
    return _ENVIRONMENT.get_template(name).render(**context)


class PageModel(Protocol):
    """A frozen dataclass naming its template; its fields are the template's names."""

    template: ClassVar[str]

    @property
    def person_name(self) -> str | None: ...


@dataclass(frozen=True)
class Room:
    """One entry of an installation's navigation: a page of one subject, within the launch."""

    name: str
    label: str
    href: str
    current: bool


# Every room of an installation's pages; Notifications is a site admin's (a manage launch).
ROOMS = (
    ("schedules", "Schedules", ""),
    ("releases", "Releases", "/releases"),
    ("calendar", "Calendar", "/calendar"),
    ("notifications", "Notifications", "/notifications"),
    ("agents", "Agents", "/agents"),
)


def rooms(session: Session, current: str) -> tuple[Room, ...]:
    """The navigation the session's launch allows, `current` marked."""
    manage = session.context_kind == "manage"
    return tuple(
        Room(name, label, session.href(sub), name == current)
        for name, label, sub in ROOMS
        if manage or name != "notifications"
    )


def page(model: PageModel, status: int = 200) -> Response:
    context = {field.name: getattr(model, field.name) for field in fields(model)}  # type: ignore[arg-type]
    return html_response(render(model.template, **context), status)


@dataclass(frozen=True)
class ErrorPage:
    """The page for a refusal."""

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
