"""Secret shapes (protocol §1) and constant-time comparison.

A value that does not have its shape is refused before any lookup, so a
malformed input never reaches the database or a log line.
"""

from __future__ import annotations

import hmac
import re
from typing import Annotated

from pydantic import StringConstraints

_TOKEN_BODY = r"[A-Za-z0-9_-]{43}"
ID_PATTERN = r"[A-Za-z0-9_-]{1,64}"
PATTERNS = {
    "activation_code": rf"dwa_{_TOKEN_BODY}",
    "installation_token": rf"dwp_{_TOKEN_BODY}",
    "launch_code": rf"dwl_{_TOKEN_BODY}",
    "delegation_token": rf"dwd_{_TOKEN_BODY}",
    "session_id": _TOKEN_BODY,
    "csrf_token": _TOKEN_BODY,
}
_SHAPES = {kind: re.compile(pattern) for kind, pattern in PATTERNS.items()}
_ID = re.compile(ID_PATTERN)

# The same shapes as pydantic field types, for validating wire bodies.
Id = Annotated[str, StringConstraints(pattern=f"^{ID_PATTERN}$")]
ActivationCodeField = Annotated[str, StringConstraints(pattern=f"^{PATTERNS['activation_code']}$")]
InstallationTokenField = Annotated[
    str, StringConstraints(pattern=f"^{PATTERNS['installation_token']}$")
]
DelegationTokenField = Annotated[
    str, StringConstraints(pattern=f"^{PATTERNS['delegation_token']}$")
]


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
