"""`GET /` as the template reads it: what this service is, and the local Dee Wan in development."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.http.html.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services


@dataclass(frozen=True)
class HomePage:
    """The page at `/`: what this service is."""

    template: ClassVar[str] = "home.html"

    title: str
    dev_origins: tuple[str, ...]  # the local Dee Wan's address helps a developer; none deployed
    person_name: str | None = None


async def home(request: Request, services: Services) -> Response:
    config = services.config
    dev_origins = config.dev_origins if config.is_development else ()
    return page(HomePage("Scheduling for Dee Wan", dev_origins))
