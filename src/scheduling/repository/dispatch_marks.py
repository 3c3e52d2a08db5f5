"""A tick with a queue: the marks it leaves on the due rows it names in messages, and their
taking back when the messages never left.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from scheduling.domain.claims import DispatchedRow, round_robin
from scheduling.repository.outbox import Outbox
from scheduling.repository.outbox_sql import OUTBOX_NEXT_SQL
from scheduling.repository.round_trips import RoundTrips

# A tick with a queue marks what it puts in messages, round-robin across installations, and
# leaves a marked row to its message until ?2 (then dispatches it again: a message can be
# lost). ?3 rows at most. The mark is no ownership; a claim clears it.
DISPATCH_SQL = """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
       AND (dispatched_at IS NULL OR dispatched_at <= ?2)
    UNION ALL
    SELECT id, lease_until AS ready_at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1
       AND (dispatched_at IS NULL OR dispatched_at <= ?2)
),
ranked AS (
    SELECT due.id, due.ready_at,
           ROW_NUMBER() OVER (PARTITION BY s.installation_id
                              ORDER BY due.ready_at, due.id) AS turn
      FROM due JOIN schedules s ON s.id = due.id
)
UPDATE schedules SET dispatched_at = ?1
 WHERE id IN (SELECT id FROM ranked ORDER BY turn, ready_at, id LIMIT ?3)
RETURNING id, installation_id,
          CASE WHEN status = 'running' THEN lease_until ELSE next_attempt_at END AS ready_at
"""

# Marks of a dispatch whose messages were not sent: due again for the next tick.
UNMARK_SQL = """UPDATE schedules SET dispatched_at = NULL
 WHERE id IN (SELECT value FROM json_each(?1)) AND dispatched_at = ?2"""


class DispatchMarks:
    def __init__(self, trips: RoundTrips, outbox: Outbox) -> None:
        self.trips = trips
        self.outbox = outbox

    async def mark(self, now: int, redispatch_before: int, limit: int) -> list[DispatchedRow]:
        """Mark up to `limit` due rows as dispatched at `now` and return them, in the order
        `Leases.due` would take them. A row dispatched at `redispatch_before` or earlier and
        still unclaimed counts as not dispatched (its message was lost, or is still waiting).
        The same round trip says when the outbox next has a delivery due (`Outbox.next_at`)."""
        db = self.trips.db
        statement = db.prepare(DISPATCH_SQL).bind(now, redispatch_before, limit)
        result, outbox = await self.trips.send([statement, db.prepare(OUTBOX_NEXT_SQL)])
        self.outbox.next_at = outbox.results[0]["next_at"] if outbox.results else None
        marked = [
            DispatchedRow(str(r["id"]), str(r["installation_id"]), int(r["ready_at"]))
            for r in result.results
        ]
        return round_robin(marked)

    async def unmark(self, ids: Sequence[str], marked_at: int) -> None:
        """Take back the marks of a dispatch whose messages never left."""
        if ids:
            statement = self.trips.db.prepare(UNMARK_SQL).bind(json.dumps(list(ids)), marked_at)
            await self.trips.send([statement])
