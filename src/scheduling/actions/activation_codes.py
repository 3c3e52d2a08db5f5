"""The operator mints a one-time activation code, or a rotation code for one installation."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.refusals import Refusal
from scheduling.repository import installations
from scheduling.services import Services, log

CODE_TTL_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class MintedCode:
    code: str  # the one place the raw code exists: answered once, stored only as its hash
    kind: str  # activate | rotate
    installation_id: str | None
    expires_at: int


async def mint_code(services: Services, installation_id: str | None) -> MintedCode:
    """An activation code, or with `installation_id` a rotation code for that one only."""
    if installation_id and await installations.get(services.db, installation_id) is None:
        raise Refusal.explained(404, "installation_not_found")
    crypto = services.crypto
    code = "dwa_" + crypto.random_token()
    kind = "rotate" if installation_id else "activate"
    now = services.clock.now_ms()
    await installations.insert_code(
        services.db, await crypto.sha256_hex(code), kind, installation_id, now, CODE_TTL_MS
    )
    log.info(
        "minted a%s code%s",
        "n activation" if kind == "activate" else " rotation",
        f" for installation {installation_id}" if installation_id else "",
    )
    return MintedCode(code, kind, installation_id, now + CODE_TTL_MS)
