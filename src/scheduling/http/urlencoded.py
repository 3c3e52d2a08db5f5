"""`application/x-www-form-urlencoded` fields (a form body, a query string), bounded.

What `urllib.parse.parse_qs` does, field for field (first value wins, blank values kept,
`+` is a space, bad UTF-8 replaced), with two bounds on the work a stranger can cause:

- at most `max_fields` fields, counted before anything is decoded;
- percent-decoding in a few passes of C code over the bytes. urllib's decoder takes a
  Python step per `%` (64 KB of `%` took 27 ms); here `%XX` becomes a `\\xXX` escape that
  `codecs.escape_decode` reads, every backslash of the input escaped first.
"""

from __future__ import annotations

import codecs
import re

# A `%` that starts an escape, and one that does not (it stays a `%`).
_ESCAPE = re.compile(rb"%(?=[0-9A-Fa-f]{2})")
_NOT_AN_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


class TooManyFields(ValueError):
    pass


def parse(text: str, *, max_fields: int) -> dict[str, str]:
    """Each field's first value, decoded; raises TooManyFields past `max_fields`."""
    fields: dict[str, str] = {}
    for name, value in parse_pairs(text, max_fields=max_fields):
        fields.setdefault(name, value)
    return fields


def parse_pairs(text: str, *, max_fields: int) -> list[tuple[str, str]]:
    """Every field in order, repeats kept (checkboxes of one name), decoded."""
    if text.count("&") + 1 > max_fields:
        raise TooManyFields(f"more than {max_fields} fields")
    pairs: list[tuple[str, str]] = []
    for part in text.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((unquote_plus(name), unquote_plus(value)))
    return pairs


def unquote_plus(text: str) -> str:
    """`urllib.parse.unquote_plus`, in C passes."""
    text = text.replace("+", " ")
    if "%" not in text:
        return text
    raw = text.encode("utf-8", "surrogatepass").replace(b"\\", b"\\\\")
    # When every `%` starts an escape, a plain replace does it.
    raw = _ESCAPE.sub(b"\\\\x", raw) if _NOT_AN_ESCAPE.search(raw) else raw.replace(b"%", b"\\x")
    return codecs.escape_decode(raw)[0].decode("utf-8", "replace")
