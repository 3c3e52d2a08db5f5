"""`GET /` — what this service is and where to go. No session, no secret, no installation."""

from __future__ import annotations

from scheduling.http.pages.home_page import HomePage
from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services


async def home(request: Request, services: Services) -> Response:
    config = services.config
    dev_origins = config.dev_origins if config.is_development else ()
    return page(HomePage("Scheduling for Dee Wan", dev_origins))
