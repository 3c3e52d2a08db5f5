"""What Dee Wan and the plugin tell each other, as data: the manifest (protocol §2), a launch's
grant (§4) and a content read (§5).

Every answer is read as a strict, frozen shape, extra fields ignored: the Dee Wan client
validates each §4–§5 answer against one of these before any of it is used, and anything else
is an untrusted answer.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from scheduling.domain.secrets import DelegationTokenField, Id
from scheduling.limits import MAX_STORED_INTEGER

# -- answers, read strictly ------------------------------------------------------------------------


class WireModel(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


_INSTANT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")


def _instant(value: str) -> datetime:
    """As `datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")` reads an instant, UTC, without
    importing `_strptime` (its first call costs about 45 ms under Pyodide): ValueError for a
    day or time that does not exist."""
    found = _INSTANT.fullmatch(value)
    if found is None:
        raise ValueError(f"not an instant: {value!r}")
    year, month, day, hour, minute, second = map(int, found.groups())
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _existing_instant(value: str) -> str:
    _instant(value)  # raises for a day that does not exist
    return value


# An instant on the wire: RFC 3339 UTC to the second, e.g. 2026-07-01T13:00:00Z.
Instant = Annotated[str, AfterValidator(_existing_instant)]


def instant_ms(value: str) -> int:
    """Epoch ms of an `Instant` (already validated)."""
    return int(_instant(value).timestamp() * 1000)


# -- a content read (§5) ---------------------------------------------------------------------------


class Content(WireModel):
    id: Id
    primary_id: Id
    title: Annotated[str, StringConstraints(max_length=500)]
    model: Annotated[str, StringConstraints(max_length=200)]
    locale: Annotated[str, StringConstraints(max_length=50)]
    current_version_id: Id
    published_version_id: Id | None


class Transition(WireModel):
    kind: Literal["publish", "unpublish"]
    to: Id


class Workflow(WireModel):
    revision: Annotated[int, Field(ge=0, le=MAX_STORED_INTEGER)]
    transitions: Annotated[list[Transition], Field(max_length=20)]


class Site(WireModel):
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=100)]


class ContentRead(WireModel):
    code: Literal["content"]
    content: Content
    workflow: Workflow
    site: Site


# -- a launch's grant (§4) -------------------------------------------------------------------------


class Person(WireModel):
    id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ContentContext(WireModel):
    kind: Literal["content"]
    content_id: Id


class ManageContext(WireModel):
    kind: Literal["manage"]


class DelegationGrant(WireModel):
    token: DelegationTokenField
    expires_at: Instant


class LaunchExchange(WireModel):
    code: Literal["launch_exchanged"]
    installation_id: Id
    person: Person
    context: ContentContext | ManageContext
    delegation: DelegationGrant


# -- the manifest (§2) -----------------------------------------------------------------------------

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
