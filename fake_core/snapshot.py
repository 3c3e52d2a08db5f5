"""State to JSON (for GET /__fake/state) and JSON to state (for POST /__fake/seed)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fake_core.core import FakeCore
from fake_core.state import KINDS, Installation


def installation_json(installation: Installation) -> dict[str, Any]:
    return {
        "id": installation.id,
        "plugin_origin": installation.plugin_origin,
        "token": installation.token,
        "revoked": installation.revoked,
        "capabilities": sorted(installation.capabilities),
        "models": None if installation.models is None else sorted(installation.models),
        "launch_urls": installation.launch_urls,
        "base_url": installation.base_url,
    }


def state_json(core: FakeCore) -> dict[str, Any]:
    state = core.state
    return {
        "now_ms": core.now_ms(),
        "base_url": core.base_url,
        "site": asdict(state.site),
        "persons": [
            {
                "id": p.id,
                "name": p.name,
                "transitions": sorted(p.transitions),
                "can_read": p.can_read,
                "role": p.role,
            }
            for p in state.persons.values()
        ],
        "contents": [asdict(item) for item in state.contents.values()],
        "groups": [
            {
                "primary_id": g.primary_id,
                "versions": g.versions,
                "current_version_id": g.current_version_id,
                "published_version_id": g.published_version_id,
                "revision": g.revision,
                "log": [asdict(entry) for entry in g.log],
            }
            for g in state.groups.values()
        ],
        "installations": [installation_json(i) for i in state.installations.values()],
    }


def seed(core: FakeCore, data: dict[str, Any]) -> None:
    """Add (or replace) site settings, persons and contents; raises ValueError/KeyError."""
    state = core.state
    if "timezone" in data:
        state.site.timezone = _text(data["timezone"])
    if "site_id" in data:
        state.site.id = _text(data["site_id"])
    for person in _list(data.get("persons", [])):
        transitions = person.get("transitions", list(KINDS))
        if not isinstance(transitions, list) or not set(transitions) <= set(KINDS):
            raise ValueError("person transitions must be a subset of publish, unpublish")
        state.add_person(
            _text(person["id"]),
            _text(person["name"]),
            frozenset(transitions),
            can_read=bool(person.get("can_read", True)),
            role=_text(person.get("role", "editor")),
        )
    for content in _list(data.get("contents", [])):
        if content.get("primary_id"):
            state.add_translation(
                _text(content["primary_id"]),
                _text(content["id"]),
                _text(content["title"]),
                locale=_text(content.get("locale", "en")),
            )
        else:
            state.add_content(
                _text(content["id"]),
                _text(content["title"]),
                model=_text(content.get("model", "article")),
                locale=_text(content.get("locale", "en")),
                published=bool(content.get("published", False)),
            )


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("expected a non-empty string")
    return value


def _list(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError("expected a list of objects")
    return value
