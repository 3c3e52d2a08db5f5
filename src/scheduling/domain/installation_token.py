"""An installation's token, sealed at rest: the one place it is sealed and opened.

The token is AES-256-GCM ciphertext under TOKEN_KEY, bound to its
installation's id, so a ciphertext copied to another row does not open. Once
TOKEN_KEY has changed it opens no more: the runner then ends that
installation's due schedules `token_unreadable` without sending, and a page
answers 503 `token_unreadable` (rotate the token in Dee Wan).
"""

from __future__ import annotations

import logging

from scheduling.domain import associated_data
from scheduling.ports import Crypto, UnreadableSecret

TOKEN_UNREADABLE = "token_unreadable"

log = logging.getLogger("scheduling")


async def seal_token(crypto: Crypto, installation_id: str, token: str) -> str:
    return await crypto.seal(token, associated_data.installation_token(installation_id))


async def open_token(crypto: Crypto, installation_id: str, token_sealed: str) -> str | None:
    """The raw token; None, logged, when it does not open under the current TOKEN_KEY."""
    try:
        return await crypto.open(token_sealed, associated_data.installation_token(installation_id))
    except UnreadableSecret:
        log.warning("installation %s: token does not open under TOKEN_KEY", installation_id)
        return None
