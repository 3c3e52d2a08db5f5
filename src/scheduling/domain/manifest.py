"""Who the plugin is to Dee Wan (protocol §2): its id, versions, launches and capabilities."""

from __future__ import annotations

from typing import Any

PLUGIN_ID = "com.example.scheduling"  # placeholder until the owner picks the real id
PLUGIN_NAME = "Scheduling"
PLUGIN_VERSION = "0.1.0"
PROTOCOL = "v1"
MANIFEST_VERSION = 1
CAPABILITIES = ("content:read", "workflow:publish", "workflow:unpublish")


def build_manifest(origin: str) -> dict[str, Any]:
    """The manifest, every URL built from `origin` (PUBLIC_ORIGIN)."""
    page = f"{origin}/installations/{{installation_id}}"
    return {
        "manifest_version": MANIFEST_VERSION,
        "protocol": PROTOCOL,
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
