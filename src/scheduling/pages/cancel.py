"""Cancel a schedule from the content page or the manage view: the page that asks first, naming
what would be cancelled, and the cancel it posts, back to the view it left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.schedules import CancelPreview, preview_cancel
from scheduling.actions.schedules import cancel_schedule as cancel
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    ScheduleCard,
    card_page,
    schedule_card,
)
from scheduling.http.requests import Request, back_query, view_query
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.repository.installations import Session
from scheduling.services import Services

# -- the template ----------------------------------------------------------------------------------

CANCEL = """{% extends "base.html" %}
{% from "cards.html" import form_fields %}
{% block main %}
<h1>Cancel this schedule?</h1>
<div class="confirm" data-cancel-confirmation="{{ card.id }}">
<dl class="facts">
  <dt>Content</dt><dd>{% if content_title is not none %}“{{ content_title }}”{% else %}<code>{{ card.content_id }}</code> (Dee Wan did not give its title){% endif %}</dd>
  <dt>Change</dt><dd>{{ card.kind_label }} version <code>{{ card.version_id }}</code></dd>
  <dt>When</dt><dd><time datetime="{{ card.when_iso }}">{{ card.when_label }}</time></dd>
  <dt>Requested by</dt><dd>{{ card.requested_by_name }}</dd>
  <dt>Status</dt><dd>{{ card.status_label }}</dd>
</dl>
<p>Once cancelled, it will not be sent. Nothing is sent to Dee Wan now, and nothing already done in Dee Wan is undone.</p>
<form method="post" action="/installations/{{ card_page.installation_id }}/schedules/{{ card.id }}/cancel" class="cancel-confirm">
  {{ form_fields(card_page) }}
  {% for name, value in back %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
  <div class="inline">
    <button type="submit" class="danger">Cancel the schedule</button>
    <a href="{{ back_href }}">Keep it, go back</a>
  </div>
</form>
<p class="support">For support: {{ card.support }}.</p>
</div>
{% endblock %}
"""


# -- the page and the cancel -----------------------------------------------------------------------


@dataclass(frozen=True)
class CancelPage:
    """The page asking to confirm a cancellation."""

    template: ClassVar[str] = "cancel.html"

    title: str
    person_name: str
    card_page: CardPage  # the session's form fields
    card: ScheduleCard
    content_title: str | None
    back: tuple[tuple[str, str], ...]  # the view's page, filter and zone, posted along
    back_href: str
    rooms: tuple[Room, ...]


def confirmation(
    session: Session, preview: CancelPreview, back: Mapping[str, str], max_lateness_ms: int
) -> CancelPage:
    card = schedule_card(preview.schedule, Moment(preview.now_ms, max_lateness_ms))
    fields = tuple(sorted(back.items()))
    return CancelPage(
        title="Cancel this schedule?",
        person_name=session.person_name,
        card_page=card_page(session),
        card=card,
        content_title=preview.title,
        back=fields,
        back_href=session.href(query=fields),
        rooms=rooms(session, "schedules"),
    )


async def cancel_page(request: Request, services: Services) -> Response:
    """`GET …/schedules/:id/cancel`: what the cancel would end, and the form that posts it."""
    session = await require_session(request, services)
    preview = await preview_cancel(services, session, request.path_params["schedule_id"])
    back = view_query(request.query)
    return page(confirmation(session, preview, back, services.config.max_lateness_ms))


async def cancel_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await cancel(services, session, schedule_id)
    return redirect(session.href(query=[("cancelled", schedule_id), *back]))
