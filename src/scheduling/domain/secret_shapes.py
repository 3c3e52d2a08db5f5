"""Secret shapes (protocol §1) and constant-time comparison.

A value that does not have its shape is refused before any lookup, so a
malformed input never reaches the database or a log line.
"""

from __future__ import annotations

import binascii
import hmac
import re
from base64 import b64decode
from dataclasses import dataclass
from typing import Annotated

from pydantic import StringConstraints


@dataclass(frozen=True)
class SecretShape:
    """A prefix and the base64url characters of 32 random bytes."""

    prefix: str
    body_length: int = 43

    @property
    def length(self) -> int:
        return len(self.prefix) + self.body_length

    @property
    def pattern(self) -> str:
        return rf"{re.escape(self.prefix)}[A-Za-z0-9_-]{{{self.body_length}}}"


SHAPES = {
    "activation_code": SecretShape("dwa_"),
    "installation_token": SecretShape("dwp_"),
    "launch_code": SecretShape("dwl_"),
    "delegation_token": SecretShape("dwd_"),
    # An agent key (issue 39): a person mints it for an agent; it never leaves the plugin's
    # hands but for the agent's.
    "agent_key": SecretShape("dwk_"),
    # A calendar feed's address (a person's, revocable): the credential a calendar client keeps.
    "calendar_feed": SecretShape("dwc_"),
    "session_id": SecretShape(""),
    "csrf_token": SecretShape(""),
}
# The secrets core and the plugin both handle (the rest never leave the plugin).
PROTOCOL_SECRETS = ("activation_code", "installation_token", "launch_code", "delegation_token")
ID_PATTERN = r"[A-Za-z0-9_-]{1,64}"
PATTERNS = {kind: shape.pattern for kind, shape in SHAPES.items()}
_COMPILED = {kind: re.compile(pattern) for kind, pattern in PATTERNS.items()}
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
    return isinstance(value, str) and _COMPILED[kind].fullmatch(value) is not None


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


# Longer than any user name and password a person types; a longer header is not ours to decode.
MAX_BASIC_CREDENTIALS = 1024


def basic_password(authorization: str | None) -> str | None:
    """The password of `Authorization: Basic base64(user:password)` (RFC 7617, UTF-8), or
    None when the header is missing or not that. The user name is not read: any will do."""
    if not authorization or len(authorization) > MAX_BASIC_CREDENTIALS:
        return None
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    _user, colon, password = decoded.partition(":")
    return password if colon else None
