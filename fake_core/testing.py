"""Helpers for tests that drive the fake core in-process (no pytest dependency)."""

from __future__ import annotations

import json
from typing import Any

from fake_core.core import FakeCore
from fake_core.state import Installation


def sample_core(now_ms: int, base_url: str = "https://cms.example") -> FakeCore:
    """A core frozen at `now_ms` (move it with `core.clock.advance`), with:

    - usr_editor (publish + unpublish), usr_viewer (may read, no transitions),
      usr_blind (may publish but not read);
    - cnt_en (article, en, draft) with its translation cnt_fr,
      cnt_pub (article, published), cnt_page (page, draft).
    """
    core = FakeCore(base_url, clock=lambda: now_ms)
    state = core.state
    state.site.timezone = "Europe/Paris"
    state.add_person("usr_editor", "Ada Lovelace", {"publish", "unpublish"})
    state.add_person("usr_viewer", "Vic Viewer", set())
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
