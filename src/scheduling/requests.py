"""The incoming request as the core sees it, whichever runtime received it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Headers(Mapping[str, str]):
    """Case-insensitive, read-only; repeated headers are joined with ', '."""

    def __init__(self, items: Mapping[str, str] | list[tuple[str, str]] | None = None) -> None:
        pairs = items.items() if isinstance(items, Mapping) else (items or [])
        store: dict[str, str] = {}
        for name, value in pairs:
            key = name.lower()
            store[key] = f"{store[key]}, {value}" if key in store else value
        self._store = store

    def __getitem__(self, name: str) -> str:
        return self._store[name.lower()]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)


@dataclass
class Request:
    method: str
    url: str
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    path_params: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"

    @property
    def query(self) -> dict[str, str]:
        """First value of each query parameter."""
        parsed = parse_qs(urlsplit(self.url).query, keep_blank_values=True)
        return {name: values[0] for name, values in parsed.items()}

    @property
    def cookies(self) -> dict[str, str]:
        jar: dict[str, str] = {}
        for part in self.headers.get("cookie", "").split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name not in jar:
                jar[name] = value
        return jar

    def form(self) -> dict[str, str]:
        """application/x-www-form-urlencoded fields; first value wins."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        parsed = parse_qs(text, keep_blank_values=True, max_num_fields=50)
        return {name: values[0] for name, values in parsed.items()}

    def json(self) -> Any:
        """The body as JSON; raises ValueError when it is not."""
        return json.loads(self.body.decode("utf-8"))
