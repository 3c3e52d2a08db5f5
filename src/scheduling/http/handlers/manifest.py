"""`GET /dee-wan/manifest.json` — protocol §2, every URL built from PUBLIC_ORIGIN."""

from __future__ import annotations

from typing import Any

from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.services import Services

PLUGIN_ID = "com.example.scheduling"  # placeholder until the owner picks the real id
PLUGIN_NAME = "Scheduling"
PLUGIN_VERSION = "0.1.0"
CAPABILITIES = ("content:read", "workflow:publish", "workflow:unpublish")


def build_manifest(origin: str) -> dict[str, Any]:
    page = f"{origin}/installations/{{installation_id}}"
    return {
        "manifest_version": 1,
        "protocol": "v1",
        "id": PLUGIN_ID,
        "name": PLUGIN_NAME,
        "version": PLUGIN_VERSION,
        "origin": origin,
        "activation_url": f"{origin}/dee-wan/activate",
        "launches": [
            {"kind": "content", "action": "schedule", "label": "Schedule", "url": page},
            {"kind": "manage", "label": "Scheduling", "url": page},
        ],
        "capabilities": list(CAPABILITIES),
    }


async def manifest(request: Request, services: Services) -> Response:
    return json_response(build_manifest(services.config.public_origin))
