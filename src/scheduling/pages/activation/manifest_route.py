"""`GET /dee-wan/manifest.json` — protocol §2, every URL built from PUBLIC_ORIGIN."""

from __future__ import annotations

from scheduling.domain.manifest import build_manifest
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.services import Services


async def manifest(request: Request, services: Services) -> Response:
    return json_response(build_manifest(services.config.public_origin))
