"""What Dee Wan grants for a launch (protocol §4): who came, for what, and a delegation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from scheduling.domain.secret_shapes import DelegationTokenField, Id
from scheduling.domain.wire import Instant, WireModel


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
