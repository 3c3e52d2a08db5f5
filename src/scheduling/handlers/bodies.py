"""Reading JSON bodies: a body that is not what we expect is a 400, never a 500."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..requests import Request

Model = TypeVar("Model", bound=BaseModel)


class BadBody(Exception):
    pass


def json_object(request: Request, *, empty_is: dict[str, Any] | None = None) -> dict[str, Any]:
    if not request.body.strip() and empty_is is not None:
        return dict(empty_is)
    try:
        data = request.json()
    except ValueError:
        raise BadBody("body is not JSON") from None
    if not isinstance(data, dict):
        raise BadBody("body must be a JSON object")
    return data


def parse(model: type[Model], data: dict[str, Any]) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError:
        # Field errors would echo input back; the shape is in the protocol spec.
        raise BadBody("body does not have the expected shape") from None
