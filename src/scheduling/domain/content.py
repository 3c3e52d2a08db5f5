"""A content item as Dee Wan reports it to the delegated person (protocol §5).

The read carries the content and its versions, the workflow revision and the
changes (`transitions`) the person may make now, and the site's zone. A
schedule pins what a read showed; a page shows what a read says now.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from scheduling.domain.secret_shapes import Id
from scheduling.domain.wire import WireModel
from scheduling.limits import MAX_STORED_INTEGER


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
