"""An installation's token, sealed at rest: the one place it is sealed and opened.

The token is AES-256-GCM ciphertext under TOKEN_KEY, bound to its
installation's id, so a ciphertext copied to another row does not open. Once
TOKEN_KEY has changed it opens no more: the runner then ends that
installation's due schedules `token_unreadable` without sending, and a page
answers 503 `token_unreadable` (rotate the token in Dee Wan).
"""

from __future__ import annotations

from scheduling.domain import associated_data, sealing
from scheduling.ports import Crypto

TOKEN_UNREADABLE = "token_unreadable"


async def seal_token(crypto: Crypto, installation_id: str, token: str) -> str:
    return await crypto.seal(token, associated_data.installation_token(installation_id))


async def open_token(crypto: Crypto, installation_id: str, token_sealed: str) -> str | None:
    """The raw token; None, logged, when it does not open under the current TOKEN_KEY."""
    context = associated_data.installation_token(installation_id)
    what = f"installation {installation_id}: token"
    return await sealing.open_or_none(crypto, token_sealed, context, what)
