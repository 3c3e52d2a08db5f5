"""Rendering whole pages: a frozen page model into its template, compiled ahead of time
(`compiled_templates.py`) so that no request lexes or parses one; and the time arithmetic the
pages do for editors.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol

import jinja2

from scheduling.domain.times import UnknownTimezone, canonical_zone, get_zone, instant_text
from scheduling.domain.wording import Refusal
from scheduling.http.html.compiled_templates import TEMPLATES
from scheduling.http.next_steps import NextSteps
from scheduling.http.responses import Response, html_response
from scheduling.repository.installations import Session

# -- time arithmetic for editors -------------------------------------------------------------------

MINUTE_MS = 60_000
# "Done" says how late it was when the command left more than this after its time: the
# cron runs once a minute, so up to a minute is on time.
LATE_AFTER_MS = MINUTE_MS
# A suggested time is a whole hour at least this far ahead, so there is time to read the form.
SUGGESTION_LEAD_MS = 30 * MINUTE_MS


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _in(ms: int, zone: str) -> datetime:
    try:
        return _utc(ms).astimezone(get_zone(zone))
    except UnknownTimezone:
        return _utc(ms)


def now_in(zone: str, now_ms: int) -> str | None:
    """What time it is in `zone` (`instant_text`), or None when it is not a known IANA name."""
    name = canonical_zone(zone)
    return instant_text(now_ms, name) if name is not None else None


def deadline_ms(due_at: int, max_lateness_ms: int) -> int:
    """The last instant anything is sent."""
    return due_at + max_lateness_ms


def lateness_ms(due_at: int, sent_at: int) -> int | None:
    """How late a send left, when it left more than `LATE_AFTER_MS` after its time."""
    late = sent_at - due_at
    return late if late > LATE_AFTER_MS else None


def planned_try(next_attempt_at: int, now_ms: int) -> int:
    """When the runner really sends next: the first minute's tick at or after the planned
    instant, and never a time already passed (an overdue row goes at the next tick)."""
    minute = -(-next_attempt_at // MINUTE_MS) * MINUTE_MS
    if minute <= now_ms:
        minute = (now_ms // MINUTE_MS + 1) * MINUTE_MS
    return minute


def suggested_local_time(zone: str, now_ms: int) -> str:
    """The next whole hour on the zone's clock at least half an hour ahead; never a wall
    time the clocks skip or show twice, so the suggestion needs no fold."""
    try:
        tz = get_zone(zone)
    except UnknownTimezone:
        return ""
    ahead = _utc(now_ms + SUGGESTION_LEAD_MS).astimezone(tz).replace(tzinfo=None)
    hour = ahead.replace(minute=0, second=0, microsecond=0)
    if hour < ahead:
        hour += timedelta(hours=1)
    for _ in range(4):
        first, second = hour.replace(tzinfo=tz, fold=0), hour.replace(tzinfo=tz, fold=1)
        round_trip = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
        if first.utcoffset() == second.utcoffset() and round_trip == hour:
            return f"{hour:%Y-%m-%dT%H:%M}"
        hour += timedelta(hours=1)
    return ""


def day_key(ms: int, zone: str) -> str:
    return f"{_in(ms, zone):%Y-%m-%d}"


def day_label(ms: int, zone: str) -> str:
    """`Thursday 2 July 2026`: a day's heading in the agenda."""
    moment = _in(ms, zone)
    return f"{_DAYS[moment.weekday()]} {moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


# -- rendering -------------------------------------------------------------------------------------


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
