"""Reading a wrangler config (JSONC) with the standard library alone."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def strip_jsonc(text: str) -> str:
    """JSONC to JSON: drop // and /* */ comments outside strings, and trailing commas."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        else:
            out.append(char)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def parse_config(text: str) -> dict[str, Any]:
    """A config's text as wrangler reads it (ValueError when it is not a JSON object)."""
    config = json.loads(strip_jsonc(text))
    if not isinstance(config, dict):
        raise ValueError("the config is not a JSON object")
    return config


def read_config(path: Path) -> dict[str, Any]:
    return parse_config(path.read_text("utf-8"))
