"""Calls the plugin makes to Dee Wan core for the management pages (protocol §4–§5).

Answers are validated against the spec's shapes; anything else is a
`CoreError("untrusted_response")`, never data shown to a person.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from .ports import HttpClient, OutboundRequest, TransportError
from .secret_shapes import DelegationTokenField, Id

TIMEOUT_S = 10.0
Instant = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")]


class CoreError(Exception):
    """Core refused (its code), could not be reached, or answered something we cannot trust."""

    def __init__(self, code: str, status: int | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.status = status


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class Person(_Wire):
    id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ContentContext(_Wire):
    kind: Literal["content"]
    content_id: Id


class ManageContext(_Wire):
    kind: Literal["manage"]


class DelegationGrant(_Wire):
    token: DelegationTokenField
    expires_at: Instant


class LaunchExchange(_Wire):
    code: Literal["launch_exchanged"]
    installation_id: Id
    person: Person
    context: ContentContext | ManageContext
    delegation: DelegationGrant


class Content(_Wire):
    id: Id
    primary_id: Id
    title: Annotated[str, StringConstraints(max_length=500)]
    model: Annotated[str, StringConstraints(max_length=200)]
    locale: Annotated[str, StringConstraints(max_length=50)]
    current_version_id: Id
    published_version_id: Id | None


class Transition(_Wire):
    kind: Literal["publish", "unpublish"]
    to: Id


class Workflow(_Wire):
    revision: int
    transitions: list[Transition]


class Site(_Wire):
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=100)]


class ContentRead(_Wire):
    code: Literal["content"]
    content: Content
    workflow: Workflow
    site: Site


EXCHANGE_ERRORS = {"invalid_request": 400, "plugin_unauthorized": 401, "launch_not_found": 404}
CONTENT_ERRORS = {
    "plugin_unauthorized": 401,
    "requester_unauthorized": 403,
    "capability_refused": 403,
    "content_not_found": 404,
}


Answer = TypeVar("Answer", bound=_Wire)


async def _call(
    http: HttpClient, request: OutboundRequest, errors: dict[str, int], answer: type[Answer]
) -> Answer:
    """Send; a listed error becomes its CoreError, anything off-spec `untrusted_response`."""
    try:
        response = await http.send(request)
    except TransportError:
        raise CoreError("dee_wan_unreachable") from None
    try:
        data = json.loads(response.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CoreError("untrusted_response", response.status) from None
    code = data.get("code") if isinstance(data, dict) else None
    if response.status != 200:
        if isinstance(code, str) and errors.get(code) == response.status:
            raise CoreError(code, response.status)
        raise CoreError("untrusted_response", response.status)
    try:
        return answer.model_validate(data)
    except ValidationError:
        raise CoreError("untrusted_response", 200) from None


async def exchange_launch(http: HttpClient, base_url: str, token: str, code: str) -> LaunchExchange:
    request = OutboundRequest(
        "POST",
        f"{base_url}/api/plugins/v1/launch/exchange",
        {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "application/json",
        },
        json.dumps({"code": code}).encode(),
        TIMEOUT_S,
    )
    return await _call(http, request, EXCHANGE_ERRORS, LaunchExchange)


async def read_content(
    http: HttpClient, base_url: str, token: str, delegation: str, content_id: str
) -> ContentRead:
    request = OutboundRequest(
        "GET",
        f"{base_url}/api/plugins/v1/content/{content_id}",
        {
            "authorization": f"Bearer {token}",
            "dee-wan-delegation": delegation,
            "accept": "application/json",
        },
        None,
        TIMEOUT_S,
    )
    return await _call(http, request, CONTENT_ERRORS, ContentRead)
