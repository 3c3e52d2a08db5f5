"""JSON from strangers: bounded in size and nesting before the parser sees it.

Python's parser recurses once per level, so deep nesting raises
`RecursionError` (or worse, exhausts a small wasm stack). A linear scan of the
brackets outside strings refuses it first, the same way on every runtime.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 32
# A string literal, or one bracket. Strings are skipped whole, so brackets inside them don't count.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class UnsafeJson(ValueError):
    """Not JSON we accept: too large, too deep, not UTF-8, or not JSON at all."""


def loads(data: bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    if len(data) > max_bytes:
        raise UnsafeJson(f"larger than {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafeJson("not UTF-8") from None
    depth = 0
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > max_depth:
                raise UnsafeJson(f"nested deeper than {max_depth} levels")
        elif char in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise UnsafeJson("not JSON") from None
