"""Reading JSON bodies: a body that is not what we expect is a 400, never a 500."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from scheduling.domain.refusals import invalid_request
from scheduling.http.requests import Request
from scheduling.safe_json import UnsafeJson

Model = TypeVar("Model", bound=BaseModel)


def json_object(request: Request, *, empty_is: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body as a JSON object; too large, too deep or not JSON is 400 `invalid_request`."""
    if not request.body.strip() and empty_is is not None:
        return dict(empty_is)
    try:
        data = request.json()
    except UnsafeJson as exc:
        raise invalid_request(f"body is {exc}") from None
    if not isinstance(data, dict):
        raise invalid_request("body must be a JSON object")
    return data


def parse(model: type[Model], data: dict[str, Any]) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError:
        # Field errors would echo input back; the shape is in the protocol spec.
        raise invalid_request("body does not have the expected shape") from None
