"""Whether a secret the operator chose is plainly guessable (issue 37, item 3).

`ADMIN_SECRET` is typed by a person: its strength is estimated the way a password checker
spends guesses, left to right, each part at the cheapest of: a common word (in any case, and
spelled with `0` for `o`, `@` for `a` and the like), a year (`1987`, `2024`), a run of
consecutive characters (`0123`, `fedc`), a walk between neighbouring keys (`qwerty`, `1q2w3e`:
a few bits more for each turn), a part already seen earlier in it (`…abcd…abcd`), or one
character of its alphabet. Below `MIN_ADMIN_SECRET_BITS` it is refused. `TOKEN_KEY` is 32
bytes that should be random: text, bytes all equal, a short block repeated or a counting run
are refused. Neither value is ever said back.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable

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
