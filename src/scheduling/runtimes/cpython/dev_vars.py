"""Read variables from a `.dev.vars` file (KEY=VALUE lines), the environment overriding."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from scheduling.config import RENAMED, SECRETS, VARIABLES


def parse_dev_vars(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def load_vars(path: Path | None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    values = parse_dev_vars(path.read_text("utf-8")) if path else {}
    for name in (*VARIABLES, *RENAMED, *SECRETS):
        if name in environ:
            values[name] = environ[name]
    return values
