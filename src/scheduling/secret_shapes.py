"""Secret shapes (protocol §1) and constant-time comparison.

A value that does not have its shape is refused before any lookup, so a
malformed input never reaches the database or a log line.
"""

from __future__ import annotations

import hmac
import re

_TOKEN_BODY = r"[A-Za-z0-9_-]{43}"
_SHAPES = {
    "activation_code": re.compile(rf"dwa_{_TOKEN_BODY}"),
    "installation_token": re.compile(rf"dwp_{_TOKEN_BODY}"),
    "launch_code": re.compile(rf"dwl_{_TOKEN_BODY}"),
    "delegation_token": re.compile(rf"dwd_{_TOKEN_BODY}"),
    "session_id": re.compile(_TOKEN_BODY),
    "csrf_token": re.compile(_TOKEN_BODY),
}
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def has_shape(kind: str, value: object) -> bool:
    return isinstance(value, str) and _SHAPES[kind].fullmatch(value) is not None


def is_id(value: object) -> bool:
    """Installation, site, content, person and schedule ids: 1–64 of [A-Za-z0-9_-]."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time comparison; compares bytes so non-ASCII input cannot raise."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
