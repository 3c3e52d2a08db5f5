"""The operator's bearer check, shared by every `/admin/*` route."""

from __future__ import annotations

from ..requests import Request
from ..responses import Response, error_response
from ..secret_shapes import bearer_token, same_secret
from ..services import Services


def refuse_unless_operator(request: Request, services: Services) -> Response | None:
    """None when the request carries ADMIN_SECRET; a 401 otherwise.

    Reading the secret first means a missing or short ADMIN_SECRET answers
    500 `misconfigured` instead of letting anyone in.
    """
    expected = services.config.admin_secret
    if same_secret(bearer_token(request.headers.get("authorization")), expected):
        return None
    response = error_response(401, "unauthorized", "operator bearer token required")
    response.headers.append(("www-authenticate", 'Bearer realm="scheduling-admin"'))
    return response
