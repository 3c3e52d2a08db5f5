"""The operator's bearer check, shared by every `/admin/*` route."""

from __future__ import annotations

from scheduling.domain.secret_shapes import bearer_token, same_secret
from scheduling.http.refusals import Refusal
from scheduling.http.requests import Request
from scheduling.services import Services


def require_operator(request: Request, services: Services) -> None:
    """Returns when the request carries ADMIN_SECRET; refuses with 401 otherwise.

    Reading the secret first means a missing or short ADMIN_SECRET answers
    500 `misconfigured` instead of letting anyone in.
    """
    expected = services.config.admin_secret
    if same_secret(bearer_token(request.headers.get("authorization")), expected):
        return
    raise Refusal(
        401,
        "unauthorized",
        "operator bearer token required",
        headers=[("www-authenticate", 'Bearer realm="scheduling-admin"')],
    )
