"""Which Dee Wan base URLs an installation may have (protocol §3)."""

from __future__ import annotations

from urllib.parse import urlsplit

from .config import Configuration

_FORBIDDEN_CHARACTERS = set(" \t\r\n\\?#@") | {chr(c) for c in range(0x20)}


def base_url_problem(url: str, config: Configuration) -> str | None:
    """None when acceptable; otherwise why not, in a few words."""
    if any(ch in _FORBIDDEN_CHARACTERS for ch in url):
        return "must not contain credentials, a query, a fragment or whitespace"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "is not a valid URL"
    if not parts.hostname:
        return "must have a host"
    if url.endswith("/"):
        return "must not end with /"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http":
        origin = f"http://{parts.netloc}".lower()
        if config.is_development and origin in config.dev_origins:
            return None
        return "http:// is accepted only in development for origins in DEE_WAN_DEV_ORIGINS"
    return "must start with https://"
