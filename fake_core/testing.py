"""Helpers for tests that drive the fake core in-process (no pytest dependency).

`sample_core` and `transition_command` for protocol tests; `FakePlugin` (with
`manifest`, `ORIGIN`, `CODE`) for tests of the install flow without the plugin.
"""

from __future__ import annotations

import json
from typing import Any

from fake_core.core import FakeCore
from fake_core.state import Installation


def sample_core(now_ms: int, base_url: str = "https://cms.example") -> FakeCore:
    """A core frozen at `now_ms` (move it with `core.clock.advance`), with:

    - usr_editor (publish + unpublish, and a site admin, so the Manage launch is
      theirs too), usr_viewer (may read, no transitions), usr_blind (may publish
      but not read);
    - cnt_en (article, en, draft) with its translation cnt_fr,
      cnt_pub (article, published), cnt_page (page, draft).
    """
    core = FakeCore(base_url, clock=lambda: now_ms)
    state = core.state
    state.site.timezone = "Europe/Paris"
    state.add_person("usr_editor", "Ada Lovelace", {"publish", "unpublish"}, role="admin")
    state.add_person("usr_viewer", "Vic Viewer", set(), role="viewer")
    state.add_person("usr_blind", "Bea Blind", {"publish"}, can_read=False)
    state.add_content("cnt_en", "Spring launch", model="article", locale="en")
    state.add_translation("cnt_en", "cnt_fr", "Lancement", locale="fr")
    state.add_content("cnt_pub", "Already out", model="article", published=True)
    state.add_content("cnt_page", "About", model="page")
    return core


def transition_command(
    core: FakeCore,
    installation: Installation,
    content_id: str = "cnt_en",
    kind: str = "publish",
    *,
    schedule_id: str = "sch_1",
    revision: int = 1,
    **overrides: Any,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and body of a §6 command that core would accept right now.

    Pins and workflow revision are read from the current state; `overrides`
    replace body fields (pass `key=` to replace the Idempotency-Key).
    """
    group = core.state.group_of(content_id)
    pin = group.current_version_id if kind == "publish" else group.published_version_id
    key = overrides.pop("key", f"sched:{installation.id}:{schedule_id}:r{revision}")
    body: dict[str, Any] = {
        "content_id": content_id,
        "kind": kind,
        "to": "published" if kind == "publish" else "draft",
        "version_id": pin,
        "workflow_revision": group.revision,
        "requested_by": "usr_editor",
        "due_at": "2026-07-01T13:00:00Z",
    }
    body.update(overrides)
    headers = {
        "Authorization": f"Bearer {installation.token}",
        "Content-Type": "application/json",
        "Idempotency-Key": key,
    }
    return headers, body


def encode(body: Any) -> bytes:
    return json.dumps(body).encode()


# -- a plugin for the install flow (core -> plugin) ------------------------------

ORIGIN = "https://scheduling.example"
CODE = "dwa_" + "c" * 43


def manifest(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "manifest_version": 1,
        "protocol": "v1",
        "id": "com.example.scheduling",
        "name": "Scheduling",
        "version": "0.1.0",
        "origin": ORIGIN,
        "activation_url": f"{ORIGIN}/dee-wan/activate",
        "launches": [
            {
                "kind": "content",
                "action": "schedule",
                "label": "Schedule",
                "url": f"{ORIGIN}/installations/{{installation_id}}",
            },
            {
                "kind": "manage",
                "label": "Scheduling",
                "url": f"{ORIGIN}/installations/{{installation_id}}",
            },
        ],
        "capabilities": ["content:read", "workflow:publish", "workflow:unpublish"],
    }
    data.update(overrides)
    return data


class FakePlugin:
    """A plugin at ORIGIN: serves `manifest` and checks every activate/rotate body as the
    plugin would (its fields, the code CODE, the core's `base_url`). It answers from
    `answers` first, then accepts.
    """

    def __init__(self, manifest: dict[str, Any], answers: list[tuple[int, str]] | None = None):
        self.manifest = manifest
        self.base_url = "https://cms.example"  # the core's, as sent in the activate body
        self.answers = answers or []
        self.received: list[dict[str, Any]] = []

    async def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        json_headers = {"content-type": "application/json"}
        if (method, url) == ("GET", f"{ORIGIN}/dee-wan/manifest.json"):
            return 200, json_headers, json.dumps(self.manifest).encode()
        assert (method, url) == ("POST", f"{ORIGIN}/dee-wan/activate")
        assert headers["content-type"] == "application/json"
        data = json.loads(body or b"")
        self.received.append(data)
        assert set(data) == {
            "protocol",
            "action",
            "code",
            "installation_id",
            "site_id",
            "base_url",
            "token",
        }
        assert data["protocol"] == "v1"
        assert data["code"] == CODE
        assert data["installation_id"].startswith("ins_")
        assert data["base_url"] == self.base_url
        assert data["token"].startswith("dwp_")
        assert len(data["token"]) == 47
        if self.answers:
            status, code = self.answers.pop(0)
        elif data["action"] == "activate":
            status, code = 201, "activated"
        else:
            status, code = 200, "rotated"
        return status, json_headers, json.dumps({"code": code}).encode()
