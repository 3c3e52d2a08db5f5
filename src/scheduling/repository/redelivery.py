"""Deliveries sent again on a person's word: one (Send again), or an endpoint's failures since
an instant (Replay), put back to waiting, due now (a paced kind's when it may next send),
with the same id and body; and a disabled endpoint enabled again.

A delivery sent again keeps its `webhook-id` and its payload; its attempts count from zero
and its retry horizon starts again (`retries_from`). Only an endpoint that is enabled takes
any; a delivery waiting or being sent is left as it is.
"""

from __future__ import annotations

from scheduling.ports import Database

# `?1` now. A paced kind's delivery waits for when its next message may leave.
_AGAIN = """UPDATE webhook_deliveries
   SET status = 'waiting', finished_at = NULL, attempt_count = 0, retries_from = ?1,
       next_attempt_at = max(?1, coalesce((SELECT e.next_message_at FROM notification_endpoints e
                                           WHERE e.id = webhook_deliveries.endpoint_id), 0))
 WHERE installation_id = ?2 AND endpoint_id = ?3
   AND endpoint_id IN (SELECT id FROM notification_endpoints
                        WHERE id = ?3 AND installation_id = ?2 AND disabled_at IS NULL)"""
SEND_AGAIN_SQL = _AGAIN + "\n   AND id = ?4 AND status IN ('delivered', 'failed')"
# Through the endpoint's history index (endpoint_id, created_at).
REPLAY_SQL = _AGAIN + "\n   AND created_at >= ?4 AND status = 'failed'\nRETURNING id"
ENABLE_SQL = """UPDATE notification_endpoints
   SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
 WHERE id = ?1 AND installation_id = ?2 AND disabled_at IS NOT NULL"""


async def send_again(
    db: Database, installation_id: str, endpoint_id: str, delivery_id: str, now: int
) -> bool:
    """False when there is no such delivery that has ended, or its endpoint is disabled."""
    result = await (
        db.prepare(SEND_AGAIN_SQL).bind(now, installation_id, endpoint_id, delivery_id).run()
    )
    return result.meta.changes == 1


async def replay_failures(
    db: Database, installation_id: str, endpoint_id: str, since: int, now: int
) -> list[str]:
    """The failed deliveries of the endpoint whose event came at `since` or later, waiting
    again; their ids."""
    result = await db.prepare(REPLAY_SQL).bind(now, installation_id, endpoint_id, since).all()
    return [str(row["id"]) for row in result.results]


async def enable(db: Database, installation_id: str, endpoint_id: str) -> bool:
    result = await db.prepare(ENABLE_SQL).bind(endpoint_id, installation_id).run()
    return result.meta.changes == 1
