"""Calls counted by key for a minute (`domain/call_limits.py`), in D1.

Taking a call is one round trip: the calls older than a minute go (every key's, by the
index on their start), the new one is inserted only if its key is still within its limit
(one statement, so two requests at once cannot both take the last place: D1 has one
writer), and the key's calls come back, from which the wait is said when it was not.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.call_limits import WINDOW_MS, Call, CallLimit, wait_ms
from scheduling.ports import Database

# With no limit on calls at once, a count no key reaches.
_UNLIMITED = 1 << 30

_PRUNE = "DELETE FROM throttle_slots WHERE started_at <= ?1"
# ?1 key, ?2 token, ?3 now, ?4 busy until, ?5 per minute, ?6 at once.
_TAKE = """
INSERT INTO throttle_slots (key, token, started_at, busy_until)
SELECT ?1, ?2, ?3, ?4
 WHERE (SELECT count(*) FROM throttle_slots WHERE key = ?1) < ?5
   AND (SELECT count(*) FROM throttle_slots WHERE key = ?1 AND busy_until > ?3) < ?6
"""
_CALLS = "SELECT token, started_at, busy_until FROM throttle_slots WHERE key = ?1"


@dataclass(frozen=True)
class Taken:
    """A call counted against a throttle's limit."""

    key: str
    token: str


async def take(db: Database, key: str, limit: CallLimit, token: str, now: int) -> Taken | int:
    """A place for one call of `key` at `now`, or how many ms until there is one."""
    _, taken, calls = await db.batch(
        [
            db.prepare(_PRUNE).bind(now - WINDOW_MS),
            db.prepare(_TAKE).bind(
                key,
                token,
                now,
                now + limit.hold_ms,
                limit.per_minute,
                limit.at_once if limit.at_once is not None else _UNLIMITED,
            ),
            db.prepare(_CALLS).bind(key),
        ]
    )
    if taken.meta.changes == 1:
        return Taken(key, token)
    rows = calls.results
    # Said by the rule over what the key holds now (never 0: it was just refused).
    return max(1, wait_ms(limit, (Call(r["started_at"], r["busy_until"]) for r in rows), now))


async def release(db: Database, taken: Taken, now: int) -> None:
    """The call has ended: no longer under way (it still counts for its minute)."""
    await (
        db.prepare("UPDATE throttle_slots SET busy_until = ?3 WHERE key = ?1 AND token = ?2")
        .bind(taken.key, taken.token, now)
        .run()
    )


async def give_back(db: Database, taken: Taken) -> None:
    """The call was not made after all (another limit refused it): it does not count."""
    await (
        db.prepare("DELETE FROM throttle_slots WHERE key = ?1 AND token = ?2")
        .bind(taken.key, taken.token)
        .run()
    )
