"""Wire-level helpers shared by the endpoints: replies, secret shapes, headers.

Kept free of state so every endpoint answers with the same JSON conventions
(protocol v1: every body is an object with a string `code`).
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# Protocol §1: a prefix and 43 base64url characters (32 random bytes).
SECRET_PREFIXES = {
    "activation_code": "dwa_",
    "installation_token": "dwp_",
    "launch_code": "dwl_",
    "delegation_token": "dwd_",
}
TOKEN_LENGTH = 43
SHAPES = {
    kind: re.compile(rf"{prefix}[A-Za-z0-9_-]{{{TOKEN_LENGTH}}}")
    for kind, prefix in SECRET_PREFIXES.items()
}
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

# What the socket layer should do with a reply.
Action = Literal["respond", "drop", "stall"]


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    action: Action = "respond"
    delay_s: float = 0.0  # hold the answer this long (after processing)

    @property
    def code(self) -> str | None:
        """The `code` of a JSON object body, if there is one."""
        try:
            data = json.loads(self.body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # a faked hostile body
            return None
        code = data.get("code") if isinstance(data, dict) else None
        return code if isinstance(code, str) else None


def json_reply(status: int, data: Mapping[str, Any]) -> Reply:
    body = json.dumps(data, separators=(",", ":")).encode()
    return Reply(status, {"content-type": "application/json", "cache-control": "no-store"}, body)


def error(status: int, code: str) -> Reply:
    return json_reply(status, {"code": code})


def has_shape(kind: str, value: object) -> bool:
    return isinstance(value, str) and SHAPES[kind].fullmatch(value) is not None


def is_id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def new_secret(prefix: str) -> str:
    """`prefix` + 43 base64url chars (32 random bytes)."""
    return prefix + secrets.token_urlsafe(32)


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(8)


def same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup; requests keep the header names as received."""
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def bearer(headers: Mapping[str, str]) -> str | None:
    value = header(headers, "authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token or token != token.strip():
        return None
    return token


def is_json_content_type(headers: Mapping[str, str]) -> bool:
    value = header(headers, "content-type") or ""
    return value.split(";", 1)[0].strip().lower() == "application/json"


def parse_json(body: bytes | None) -> Any:
    """Any JSON value, or None when absent or not JSON."""
    if not body:
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def parse_json_object(body: bytes | None) -> dict[str, Any] | None:
    data = parse_json(body)
    return data if isinstance(data, dict) else None
