"""`GET /` — what this service is and where to go. No session, no secret, no installation."""

from __future__ import annotations

from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services


async def home(request: Request, services: Services) -> Response:
    config = services.config
    # The local Dee Wan's address helps a developer; a deployment names none.
    dev_origins = config.dev_origins if config.is_development else ()
    return page("home.html", title="Scheduling for Dee Wan", dev_origins=dev_origins)
