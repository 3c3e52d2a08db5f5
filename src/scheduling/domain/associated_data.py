"""Associated data bound into each sealed value: a ciphertext moved to another row won't open.
A channel kind's secret is bound by its own module (`channels/`)."""

from __future__ import annotations


def installation_token(installation_id: str) -> str:
    return f"installation-token:{installation_id}"


def delegation(installation_id: str, session_hash: str) -> str:
    return f"delegation:{installation_id}:{session_hash}"


def content_title(installation_id: str, schedule_id: str) -> str:
    return f"content-title:{installation_id}:{schedule_id}"
