"""Associated data bound into each sealed value: a ciphertext moved to another row won't open."""

from __future__ import annotations


def installation_token(installation_id: str) -> str:
    return f"installation-token:{installation_id}"


def delegation(installation_id: str, session_hash: str) -> str:
    return f"delegation:{installation_id}:{session_hash}"


def webhook_secret(installation_id: str, endpoint_id: str) -> str:
    return f"webhook-secret:{installation_id}:{endpoint_id}"


def content_title(installation_id: str, schedule_id: str) -> str:
    return f"content-title:{installation_id}:{schedule_id}"


def chat_url(installation_id: str, endpoint_id: str) -> str:
    return f"chat-url:{installation_id}:{endpoint_id}"
