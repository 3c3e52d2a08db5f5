"""`POST /dee-wan/activate` — Dee Wan core activates an installation or rotates its token (§3)."""

from __future__ import annotations

from scheduling.actions.activation import ActivationRequest
from scheduling.actions.activation import activate as activate_installation
from scheduling.http.bodies import json_object, parse
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.services import Services


async def activate(request: Request, services: Services) -> Response:
    done = await activate_installation(services, parse(ActivationRequest, json_object(request)))
    return json_response({"code": done}, 201 if done == "activated" else 200)
