"""A refused form is shown again by its route (`Route.again`), which `App.handle` calls with
what the handler raised: the handler catches nothing. A refusal the route does not show
again, or a route without `again`, is rendered as every refusal is."""

from __future__ import annotations

from typing import Any

from scheduling.app import App
from scheduling.domain.wording import Refusal
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import Response
from scheduling.http.routing import Route, Router
from tests.support.app import ORIGIN


class FormSaysNo(Refusal):
    """What a form's action raises: enough to show the form again."""

    def __init__(self, entered: str) -> None:
        super().__init__(422, "form_says_no", "Not that.")
        self.entered = entered


async def refuse(request: Request, services: Any) -> Response:
    entered = request.form().get("value", "")
    if entered == "other":
        raise Refusal(409, "other_reason", "Something else.")
    raise FormSaysNo(entered)


async def again(request: Request, services: Any, refused: Refusal) -> Response | None:
    if not isinstance(refused, FormSaysNo):
        return None
    return Response(refused.status, f"again: {refused.entered}".encode(), [])


def post(app: App, path: str, value: str) -> Request:
    headers = Headers({"content-type": "application/x-www-form-urlencoded", "accept": "text/html"})
    return Request("POST", f"{ORIGIN}{path}", headers, f"value={value}".encode())


async def test_app_handle_shows_the_form_again_through_its_route(app: App) -> None:
    app.router = Router([Route("POST", "/form", refuse, again), Route("POST", "/bare", refuse)])
    shown = await app.handle(post(app, "/form", "kept"))
    assert (shown.status, shown.body) == (422, b"again: kept")
    # A refusal its route does not show again, and a route without `again`: the error page.
    for path, value, code in [("/form", "other", "other_reason"), ("/bare", "x", "form_says_no")]:
        answer = await app.handle(post(app, path, value))
        assert f'data-error-code="{code}"' in answer.body.decode(), path
