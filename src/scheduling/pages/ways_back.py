"""Addresses a person can land on by a GET although they take a POST (issue 38): a refused
form leaves the browser at `/installations/:id/schedules`; reloading it, or restoring the tab
later, leads back to the installation's page (which asks for a session when there is none)
rather than to "This address takes POST only". And `/favicon.ico`, which every browser asks
for, answers without an error."""

from __future__ import annotations

from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.http.guards import TAB
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.services import Services


async def to_page(request: Request, services: Services) -> Response:
    installation_id = request.path_params["installation_id"]
    if not is_id(installation_id):
        raise Refusal(404, "not_found", "There is nothing at this address.")
    tab = request.query.get("tab", "")  # within its launch, when the address says which
    return redirect(
        f"/installations/{installation_id}" + (f"?tab={tab}" if TAB.fullmatch(tab) else "")
    )


async def favicon(request: Request, services: Services) -> Response:
    """No icon: a 204 the browser keeps, so the console shows no 404 on every page."""
    return Response(204, b"", [("cache-control", "public, max-age=86400")])
