"""The core's state in a JSON file, so a restarted fake core keeps what was made in it.

`python -m fake_core --state FILE` loads FILE at start when it exists and
saves it after every request that changed something: the site, persons and
their roles, content and versions, installations and their tokens, launch
codes, delegations, the idempotency memory and the log of the last
`RECEIVED_LIMIT` transition commands received. The call record, queued
faults and the clock offset are test knobs and start afresh.

A file of format 1 (before persons had roles and the log was kept) still
loads: a person who may take no transition is a viewer, anyone else an
editor; nobody is a site admin until one is seeded.

The file holds installation tokens: it is written with mode 0600, and whole
(a new file renamed over the old), so a crash never leaves half of it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fake_core.state import (
    ROLES,
    AppliedTransition,
    ContentItem,
    CoreState,
    Delegation,
    Group,
    Installation,
    LaunchCode,
    Person,
    ReceivedChat,
    ReceivedTransition,
    ReceivedWebhook,
    Remembered,
    Site,
)

FORMAT = 2
READABLE_FORMATS = (1, 2)


class StateFileError(Exception):
    """The file cannot be used; the message says which and what to do."""


def state_to_json(state: CoreState) -> dict[str, Any]:
    group_of = {id(entry): g.primary_id for g in state.groups.values() for entry in g.log}
    return {
        "format": FORMAT,
        "site": asdict(state.site),
        "persons": [
            {**asdict(p), "transitions": sorted(p.transitions)} for p in state.persons.values()
        ],
        "contents": [asdict(item) for item in state.contents.values()],
        "groups": [
            {name: value for name, value in asdict(g).items() if name != "log"}
            for g in state.groups.values()
        ],
        # Each group's log is the part of the core's log that names it.
        "log": [{**asdict(entry), "group": group_of.get(id(entry))} for entry in state.log],
        "installations": [_installation_json(i) for i in state.installations.values()],
        "launches": [asdict(launch) for launch in state.launches.values()],
        "delegations": [asdict(delegation) for delegation in state.delegations.values()],
        "idempotency": [
            {"installation_id": installation_id, "key": key, **asdict(remembered)}
            for (installation_id, key), remembered in state.idempotency.items()
        ],
        "version_counter": state.version_counter,
        "received": [asdict(entry) for entry in state.received],
        "webhook_secrets": list(state.webhook_secrets),
        "webhooks": [asdict(entry) for entry in state.webhooks],
        "chat_messages": [asdict(entry) for entry in state.chat_messages],
    }


def state_from_json(data: Any) -> CoreState:
    """Raises KeyError, TypeError or ValueError for a body this module did not write."""
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    version = data.get("format")
    if version not in READABLE_FORMATS:
        raise ValueError(f"format {version!r}, expected {FORMAT}")
    state = CoreState()
    state.site = Site(**data["site"])
    for p in data["persons"]:
        person = Person(**{**p, "transitions": frozenset(p["transitions"])})
        if version == 1:
            person.role = "editor" if person.transitions else "viewer"
        if person.role not in ROLES:
            raise ValueError(f"person {person.id} has role {person.role!r}")
        state.persons[person.id] = person
    for item in data["contents"]:
        state.contents[item["id"]] = ContentItem(**item)
    for g in data["groups"]:
        state.groups[g["primary_id"]] = Group(**g)
    for raw in data["log"]:
        fields = dict(raw)
        group = fields.pop("group")
        entry = AppliedTransition(**fields)
        state.log.append(entry)
        if group is not None:
            state.groups[group].log.append(entry)
    for i in data["installations"]:
        state.installations[i["id"]] = _installation(i)
    for launch in data["launches"]:
        state.launches[launch["code"]] = LaunchCode(**launch)
    for delegation in data["delegations"]:
        state.delegations[delegation["token"]] = Delegation(**delegation)
    for r in data["idempotency"]:
        state.idempotency[(r["installation_id"], r["key"])] = Remembered(
            r["body"], r["applied_at_ms"]
        )
    state.version_counter = int(data["version_counter"])
    for entry in data["received"] if version > 1 else []:
        state.receive(ReceivedTransition(**entry))
    # Written since the plugin's notifications; a file from before has none.
    state.webhook_secrets = [str(secret) for secret in data.get("webhook_secrets", [])]
    state.webhooks = [ReceivedWebhook(**entry) for entry in data.get("webhooks", [])]
    state.chat_messages = [ReceivedChat(**entry) for entry in data.get("chat_messages", [])]
    return state


class StateFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: str | None = None  # what the file holds, to skip unchanged saves

    def load(self) -> CoreState | None:
        """The saved state, or None when there is no file yet."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateFileError(f"cannot read {self.path}: {exc.strerror}") from None
        try:
            state = state_from_json(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise StateFileError(
                f"{self.path} is not a state this fake core saved ({type(exc).__name__}: {exc}); "
                "delete it to start anew"
            ) from None
        self._written = text
        return state

    def save(self, state: CoreState) -> None:
        text = json.dumps(state_to_json(state), indent=1)
        if text == self._written:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.unlink(missing_ok=True)  # so the mode below applies: it holds tokens
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(fresh, self.path)
        self._written = text


def _installation_json(installation: Installation) -> dict[str, Any]:
    models = installation.models
    return {
        **asdict(installation),
        "capabilities": sorted(installation.capabilities),
        "models": None if models is None else sorted(models),
    }


def _installation(data: dict[str, Any]) -> Installation:
    models = data["models"]
    return Installation(
        **{
            **data,
            "capabilities": frozenset(data["capabilities"]),
            "models": None if models is None else frozenset(models),
        }
    )
