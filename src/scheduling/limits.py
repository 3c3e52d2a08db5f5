"""Limits that several layers must agree on, kept in one place.

The Dee Wan client obeys the request timeout, the wire models the largest
integer D1 can store, and the runner store D1's bound-parameter limit;
`config` checks the settings against all three (a lease must outlive a batch's
timeouts, one batch must fit in a tick's D1 queries).
"""

from __future__ import annotations

from dataclasses import dataclass

# Every call to Dee Wan gives up after this long, body included (protocol §6, the Runner table).
REQUEST_TIMEOUT_MS = 10_000
# D1 binds through JavaScript: Pyodide hands |n| >= 2**53 - 1 over as a BigInt, which D1
# refuses (measured in the harness), so a stored integer stays below that.
MAX_STORED_INTEGER = 2**53 - 2
# D1 allows 100 bound parameters per statement.
MAX_BOUND_PARAMETERS = 100


@dataclass(frozen=True)
class StatementShape:
    """A multi-row statement: `fixed` parameters, then `width` per row of its VALUES."""

    fixed: int
    width: int

    def rows_per_statement(self) -> int:
        return (MAX_BOUND_PARAMETERS - self.fixed) // self.width

    def statements(self, rows: int) -> int:
        return -(-rows // self.rows_per_statement())


# The leases' multi-row statements (repository/round_trips.py checks each binds so).
CLAIM = StatementShape(fixed=4, width=4)
CLAIM_WITHIN = StatementShape(fixed=5, width=4)
REFUSE_UNSENT = StatementShape(fixed=3, width=6)
SETTLE = StatementShape(fixed=3, width=6)
FINISH_ATTEMPTS = StatementShape(fixed=0, width=6)
DROP_ATTEMPTS = StatementShape(fixed=0, width=2)
# The outbox (repository/outbox.py): events written with a settle or an unsent refusal, and
# the deliveries' settle with its updates of the endpoints, by id.
# An events row is a settled schedule's id and the JSON array of the events its settle raises
# (its own, and a completion's stale notice of the other kind's schedule: issue 38), so a
# batch's settle still costs one row per claim.
EVENTS = StatementShape(fixed=2, width=2)
SETTLE_DELIVERIES = StatementShape(fixed=2, width=8)
ENDPOINT_IDS = StatementShape(fixed=2, width=1)
# Claiming deliveries: the claim, a chat endpoint's next minute, reading their endpoints and
# the sealed titles a chat digest names.
CLAIM_DELIVERIES_COST = 4
LAST_SENT = StatementShape(fixed=0, width=2)
# A tick's record: its history row, the running totals it adds to, the pruning of old rows
# (repository/tick_history.py).
RECORD_STATEMENTS = 3


def batch_cost(rows: int, *, capped: bool = False) -> int:
    """The most D1 statements a batch of `rows` can cost: its due query, its claim round trip
    (refusals and their events, claims, opening attempts; a claim under the per-installation
    cap also reads how many claims each installation holds) and its settle round trip (settles
    and their events, finished or dropped attempts, each installation's last send)."""
    claim = 1 + CLAIM_WITHIN.statements(rows) if capped else CLAIM.statements(rows)
    claim += REFUSE_UNSENT.statements(rows) + EVENTS.statements(rows) + 1
    settle = SETTLE.statements(rows) + EVENTS.statements(rows) + FINISH_ATTEMPTS.statements(rows)
    return 1 + claim + settle + DROP_ATTEMPTS.statements(rows) + LAST_SENT.statements(rows)


def delivery_batch_cost(messages: int) -> int:
    """The most D1 statements a batch of `messages` can cost: its claim round trip, and its
    settle round trip (the deliveries by id and the digests by endpoint; endpoints marked
    failing or not, those disabled by a 410 or by days of failing, and the waiting deliveries
    of those)."""
    settle = 2 * SETTLE_DELIVERIES.statements(messages) + 5 * ENDPOINT_IDS.statements(messages)
    return CLAIM_DELIVERIES_COST + settle
