"""The operator erases everything the plugin holds for an installation, unless a schedule runs."""

from __future__ import annotations

from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.ports import Database
from scheduling.repository import installations
from scheduling.services import log


async def delete_installation_data(db: Database, installation_id: str) -> None:
    if not is_id(installation_id) or await installations.get(db, installation_id) is None:
        raise Refusal.explained(404, "installation_not_found")
    # The batch re-checks "none running" itself; the read first only spares a write.
    running = await installations.has_running_schedule(db, installation_id)
    if running or not await installations.delete_all_data(db, installation_id):
        if await installations.get(db, installation_id) is None:
            raise Refusal.explained(404, "installation_not_found")
        raise Refusal(409, "execution_in_progress", "a schedule is running; try again shortly")
    log.info("installation %s: all plugin data deleted", installation_id)
