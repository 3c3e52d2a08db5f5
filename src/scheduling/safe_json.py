"""JSON from strangers: bounded in size and nesting before the parser sees it.

Python's parser recurses once per level, so deep nesting raises `RecursionError` (or exhausts
a small wasm stack). The nesting is measured first, alike on every runtime, by one regex that
reads the bytes once: a state machine whose depth is the nesting of the pattern itself. Every
quantifier is possessive (`*+`), so nothing is given back and re-read: the match stops at the
first bracket that opens deeper than `max_depth` or closes nothing. (A backtracking pattern
for strings would scan to the end from every quote of `"` then `\\"` repeated: 18 s for
64 KB; `bench/parser_bench.py` prints the worst input found against a benign one.)
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

MAX_DEPTH = 32

# Bytes that are neither a quote nor a bracket, as a possessive run.
_PLAIN = rb'[^"\[\]{}]*+'
# A string, closed or not: it cannot fail once it has seen its `"`.
_STRING = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"?'
# What may stand between two brackets.
_BETWEEN = _PLAIN + rb"(?:" + _STRING + _PLAIN + rb")*+"
# An opened bracket ends with its closing one, or with the input (not JSON, but not deeper).
_OPEN, _CLOSE = rb"[\[{]", rb"(?:[\]}]|\Z)"


class UnsafeJson(ValueError):
    """Not JSON we accept: too large, too deep, not UTF-8, or not JSON at all."""


@functools.cache
def _within(max_depth: int) -> re.Pattern[bytes]:
    """Matches the longest prefix whose brackets (outside strings) never nest deeper than
    `max_depth` nor close more than they opened."""
    pattern = _BETWEEN
    for _ in range(max_depth):
        pattern = _BETWEEN + rb"(?:" + _OPEN + pattern + _CLOSE + _BETWEEN + rb")*+"
    return re.compile(pattern, re.DOTALL)


_within(MAX_DEPTH)  # compiled at import, so a Worker's snapshot holds it


def loads(data: bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    if len(data) > max_bytes:
        raise UnsafeJson(f"larger than {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafeJson("not UTF-8") from None
    scanned = _within(max_depth).match(data)
    end = scanned.end() if scanned else 0
    if end < len(data):
        if data[end] in b"[{":
            raise UnsafeJson(f"nested deeper than {max_depth} levels")
        raise UnsafeJson("not JSON")  # a bracket that closes nothing
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise UnsafeJson("not JSON") from None
