"""Secrets: their shapes (protocol §1), compared in constant time; whether one the operator
chose is plainly guessable; and sealing at rest.

A value without its shape is refused before any lookup. `ADMIN_SECRET` is refused below
`MIN_ADMIN_SECRET_BITS`, estimated as a guesser spends guesses, and a `TOKEN_KEY` that is not
random is refused; neither is ever said back. A sealed value is `v1.` + base64url(iv ‖
ciphertext ‖ tag), AES-256-GCM under `TOKEN_KEY` with what it belongs to as associated data,
so a ciphertext copied to another row does not open. Once `TOKEN_KEY` has changed an
installation's token opens no more: its due schedules end `token_unreadable`, unsent.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import itertools
import logging
import math
import re
from base64 import b64decode
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from pydantic import StringConstraints

from scheduling.ports import Crypto, UnreadableSecret

# -- shapes ----------------------------------------------------------------------------------------


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
    # An agent key: a person mints it for an agent; it never leaves the plugin's
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


# -- secrets the operator chooses ------------------------------------------------------------------

MIN_ADMIN_SECRET_BITS = 64
HOW_TO_MAKE_ONE = "make a random one with: openssl rand -base64 32"

# A pattern's few guesses: which one, where it starts and how long it is.
_PATTERN_BITS = 8
_REPEAT_BITS = 4
_SHORTEST_RUN = 3
_TURN_BITS = math.log2(6)  # which of a key's neighbours a walk turns to
_KEYBOARD_ROWS = ("`1234567890-=", "qwertyuiop[]\\", "asdfghjkl;'", "zxcvbnm,./")
_SHIFTED_ROWS = ("~!@#$%^&*()_+", "QWERTYUIOP{}|", 'ASDFGHJKL:"', "ZXCVBNM<>?")
# Where each key sits: its row, and how far along it (each row starts half a key or so
# further right than the one above), for its shifted character too.
_KEYS = {
    key: (row, index + offset)
    for rows in (_KEYBOARD_ROWS, _SHIFTED_ROWS)
    for row, (keys, offset) in enumerate(zip(rows, (0, 1.5, 1.75, 2.25), strict=True))
    for index, key in enumerate(keys)
}
_LOOKALIKES = str.maketrans("0@4$531!7", "oaasseiit")
_YEAR = re.compile(r"(?:19|20)\d\d")
# The words guessed first (lower case; a part matches whatever its case).
_WORDS = (
    "password", "passw0rd", "secret", "admin", "letmein", "welcome", "changeme", "default",
    "iloveyou", "monkey", "dragon", "master", "qwerty", "summer", "winter", "spring", "autumn",
    "sunshine", "princess", "football", "baseball", "shadow", "superman", "batman", "trustno",
    "hello", "login", "access", "january", "february", "march", "april", "june", "july",
    "august", "september", "october", "november", "december", "monday", "friday", "sunday",
    "love", "test", "company",
)  # fmt: skip


def admin_secret_bits(secret: str) -> float:
    """About how many bits of guessing `secret` takes."""
    alphabet = _alphabet_size(secret)
    bits = 0.0
    i = 0
    while i < len(secret):
        length, cost = _cheapest_at(secret, i)
        if length <= 1:
            length, cost = 1, math.log2(alphabet)
        bits += cost
        i += length
    return bits


def admin_secret_problem(secret: str) -> str | None:
    if admin_secret_bits(secret) < MIN_ADMIN_SECRET_BITS:
        return (
            "is too easy to guess (a common word, a year, a run such as 1234, a walk on the"
            f" keyboard such as qwerty or 1q2w3e, or a part repeated): {HOW_TO_MAKE_ONE}"
        )
    return None


def token_key_problem(key: bytes) -> str | None:
    """Bytes plainly not random: text (no byte of 32 random ones at 128 or above happens
    once in four billion keys), too few different ones (all equal, a short block repeated),
    two equal halves, or a counting run (a constant step from each to the next)."""
    steps = {(b - a) % 256 for a, b in itertools.pairwise(key)}
    half = len(key) // 2
    if max(key, default=0) < 0x80:
        return f"is not random (its bytes are text, not random bytes): {HOW_TO_MAKE_ONE}"
    if len(set(key)) < len(key) // 2 or key[:half] == key[half:] or len(steps) == 1:
        return f"is not random (its bytes follow a pattern): {HOW_TO_MAKE_ONE}"
    return None


def _alphabet_size(secret: str) -> int:
    size = 0
    size += 26 if any(c.islower() for c in secret) else 0
    size += 26 if any(c.isupper() for c in secret) else 0
    size += 10 if any(c.isdigit() for c in secret) else 0
    size += 33 if any(not c.isalnum() for c in secret) else 0
    return max(size, 2)


def _cheapest_at(secret: str, i: int) -> tuple[int, float]:
    """The longest pattern starting at `i` and its cost; (0, 0) when none."""
    found = [(0, 0.0)]
    lower = secret.lower()
    plain = lower.translate(_LOOKALIKES)
    for word in _WORDS:
        if lower.startswith(word, i) or plain.startswith(word, i):
            found.append((len(word), _PATTERN_BITS))
    if _YEAR.match(secret, i):
        found.append((4, _PATTERN_BITS))
    found.append((_run(lower, i, _consecutive), _PATTERN_BITS))
    found.append(_keyboard_walk(secret, i))
    found.append((_seen_before(secret, i), _REPEAT_BITS))
    length, cost = max(found, key=lambda pair: (pair[0], -pair[1]))
    return (length, cost) if length >= _SHORTEST_RUN else (0, 0.0)


def _run(text: str, i: int, step: Callable[[str, str], int | None]) -> int:
    """How long the run at `i` is whose neighbours all take the same `step`."""
    if i + 1 >= len(text):
        return 1
    first = step(text[i], text[i + 1])
    if first is None:
        return 1
    j = i + 1
    while j + 1 < len(text) and step(text[j], text[j + 1]) == first:
        j += 1
    return j - i + 1


def _consecutive(a: str, b: str) -> int | None:
    difference = ord(b) - ord(a)
    return difference if difference in (-1, 0, 1) else None


def _keyboard_walk(secret: str, i: int) -> tuple[int, float]:
    """The walk at `i` from each key to a neighbour (beside it, or on the row above or below
    within a key's width), and its cost: the pattern, and a few bits for each turn."""
    turns, direction, j = 0, None, i
    while j + 1 < len(secret):
        step = _step(secret[j], secret[j + 1])
        if step is None:
            break
        turns += direction is not None and step != direction
        direction, j = step, j + 1
    return j - i + 1, _PATTERN_BITS + turns * _TURN_BITS


def _step(a: str, b: str) -> tuple[int, float] | None:
    """Which way the next key lies, when it is a neighbour."""
    if a not in _KEYS or b not in _KEYS:
        return None
    (row_a, at_a), (row_b, at_b) = _KEYS[a], _KEYS[b]
    rows, along = row_b - row_a, at_b - at_a
    if (rows == 0 and abs(along) == 1) or (abs(rows) == 1 and abs(along) < 1):
        return rows, along
    return None


def _seen_before(secret: str, i: int) -> int:
    """The longest part at `i` that already occurs before `i`."""
    length = 0
    while i + length < len(secret) and secret[i : i + length + 1] in secret[: i + length]:
        length += 1
    return length


# -- sealed values, and what each is bound to ------------------------------------------------------

log = logging.getLogger("scheduling")

PREFIX = "v1."
IV_BYTES = 12
TAG_BYTES = 16


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def frame(iv: bytes, ciphertext_and_tag: bytes) -> str:
    return PREFIX + b64url(iv + ciphertext_and_tag)


def unframe(sealed: str) -> tuple[bytes, bytes]:
    """(iv, ciphertext ‖ tag); raises UnreadableSecret when the framing is wrong."""
    if not isinstance(sealed, str) or not sealed.startswith(PREFIX):
        raise UnreadableSecret("unknown sealed format")
    try:
        raw = unb64url(sealed[len(PREFIX) :])
    except ValueError:
        raise UnreadableSecret("damaged sealed value") from None
    if len(raw) < IV_BYTES + TAG_BYTES:
        raise UnreadableSecret("damaged sealed value")
    return raw[:IV_BYTES], raw[IV_BYTES:]


async def open_or_none(crypto: Crypto, sealed: str, context: str, what: str) -> str | None:
    """The plaintext; None, logged as `what` (never the value), when it does not open under
    the current TOKEN_KEY (the key changed, or the value was damaged or moved)."""
    try:
        return await crypto.open(sealed, context)
    except UnreadableSecret:
        log.warning("%s does not open under TOKEN_KEY", what)
        return None


def installation_token(installation_id: str) -> str:
    return f"installation-token:{installation_id}"


def delegation(installation_id: str, session_hash: str) -> str:
    return f"delegation:{installation_id}:{session_hash}"


def content_title(installation_id: str, schedule_id: str) -> str:
    return f"content-title:{installation_id}:{schedule_id}"


TOKEN_UNREADABLE = "token_unreadable"


async def seal_token(crypto: Crypto, installation_id: str, token: str) -> str:
    return await crypto.seal(token, installation_token(installation_id))


async def open_token(crypto: Crypto, installation_id: str, token_sealed: str) -> str | None:
    """The raw token; None, logged, when it does not open under the current TOKEN_KEY."""
    context = installation_token(installation_id)
    what = f"installation {installation_id}: token"
    return await open_or_none(crypto, token_sealed, context, what)
