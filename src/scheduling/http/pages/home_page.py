"""`GET /` as the template reads it: what this service is, and the local Dee Wan in development."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class HomePage:
    """The page at `/`: what this service is."""

    template: ClassVar[str] = "home.html"

    title: str
    dev_origins: tuple[str, ...]  # the local Dee Wan's address helps a developer; none deployed
    person_name: str | None = None
