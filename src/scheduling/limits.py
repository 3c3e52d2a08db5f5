"""Limits that several layers must agree on, kept in one place: the request timeout, the largest
integer D1 stores, D1's bound parameters, and what one runner invocation may spend
(`INVOCATION_LIMITS`: a new limit is an entry here and a row in
docs/reference/configuration.md, which `tests/test_invocation_limits.py` checks end to end).

A `CallLimit` bounds a call that costs someone else (a test event, a delivery sent again, a
create): so many a minute for one key, and so many at once, counted in D1 so that it holds
across isolates and processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

# -- what config, client and stores agree on -------------------------------------------------------

# Every call to Dee Wan gives up after this long, body included (protocol §6, the Runner table).
REQUEST_TIMEOUT_MS = 10_000
# A claim's lease keeps this much room for the settle after its last answer.
LEASE_MARGIN_MS = 5_000
# D1 binds through JavaScript: Pyodide hands |n| >= 2**53 - 1 over as a BigInt, which D1
# refuses (measured in the harness), so a stored integer stays below that.
MAX_STORED_INTEGER = 2**53 - 2
# D1 allows 100 bound parameters per statement.
MAX_BOUND_PARAMETERS = 100
# The local runtime's pool for the calls a visitor can trigger (test events, Send again), and
# the most of it one installation may hold at once: the rest stays free for the others.
VISITOR_CONNECTIONS = 16
VISITOR_CALLS_PER_INSTALLATION = VISITOR_CONNECTIONS // 4


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
REFUSE_UNSENT = StatementShape(fixed=2, width=7)
SETTLE = StatementShape(fixed=3, width=6)
FINISH_ATTEMPTS = StatementShape(fixed=0, width=6)
DROP_ATTEMPTS = StatementShape(fixed=0, width=2)
# The outbox (repository/outbox.py): events written with a settle or an unsent refusal, and
# the deliveries' settle with its updates of the endpoints, by id.
# An events row is a settled schedule's id and the JSON array of the events its settle raises
# (its own, and a completion's stale notice of the other kind's schedule), so a
# batch's settle still costs one row per claim.
EVENTS = StatementShape(fixed=2, width=2)
SETTLE_DELIVERIES = StatementShape(fixed=2, width=8)
ENDPOINT_IDS = StatementShape(fixed=2, width=1)
# Claiming deliveries: the claim, a paced kind's next message time, reading their endpoints
# and the sealed titles a digest names.
CLAIM_DELIVERIES_COST = 4
LAST_SENT = StatementShape(fixed=0, width=2)
# A tick's record: its history row, the running totals it adds to, the pruning of old rows
# (repository/history.py).
RECORD_STATEMENTS = 3


def batch_cost(rows: int, *, capped: bool = False) -> int:
    """The most D1 statements a batch of `rows` can cost: its due query, its claim round trip
    (refusals and their events, claims, which open their attempts by themselves; a claim under
    the per-installation cap also reads how many claims each installation holds) and its
    settle round trip (settles and their events, finished or dropped attempts, each
    installation's last send)."""
    claim = 1 + CLAIM_WITHIN.statements(rows) if capped else CLAIM.statements(rows)
    claim += REFUSE_UNSENT.statements(rows) + EVENTS.statements(rows)
    settle = SETTLE.statements(rows) + EVENTS.statements(rows) + FINISH_ATTEMPTS.statements(rows)
    return 1 + claim + settle + DROP_ATTEMPTS.statements(rows) + LAST_SENT.statements(rows)


def delivery_batch_cost(messages: int) -> int:
    """The most D1 statements a batch of `messages` can cost: its claim round trip, and its
    settle round trip (the deliveries by id and the digests by endpoint; endpoints marked
    failing or not, those disabled by a 410 or by days of failing, and the waiting deliveries
    of those)."""
    settle = 2 * SETTLE_DELIVERIES.statements(messages) + 5 * ENDPOINT_IDS.statements(messages)
    return CLAIM_DELIVERIES_COST + settle


def minimum_queries_per_tick(rows_per_batch: int) -> int:
    """One batch at its most expensive, and the tick's record."""
    return batch_cost(rows_per_batch) + RECORD_STATEMENTS


def minimum_lease_ms(rows_per_batch: int, send_concurrency: int, share: int) -> int:
    """The longest a batch can hold its rows: claimed while the batch before sends its last
    wave, then its own sends in waves of `send_concurrency`, each up to the timeout; or, with
    two installations in it, each's rows (half the batch, at most a wave) `share` at a time."""
    each = min(-(-rows_per_batch // 2), send_concurrency)
    waves = max(-(-rows_per_batch // send_concurrency), -(-each // share)) + 1
    return waves * REQUEST_TIMEOUT_MS + LEASE_MARGIN_MS


def lease_problem(lease_ms: int, rows: int, concurrency: int, share: int) -> str | None:
    """LEASE_MS too short for a batch of `rows` sent `concurrency` (each installation `share`)
    at a time: a lease must outlive its batch."""
    needed = minimum_lease_ms(rows, concurrency, share)
    if lease_ms >= needed:
        return None
    return (
        f"must be at least {needed} for MAX_ROWS_PER_BATCH={rows}, SEND_CONCURRENCY="
        f"{concurrency} and MAX_SLOTS_PER_INSTALLATION={share}: a lease must outlive its"
        " batch ((the more of ceil(rows / concurrency) and ceil(min(ceil(rows / 2),"
        f" concurrency) / slots) + 1) x {REQUEST_TIMEOUT_MS} ms + {LEASE_MARGIN_MS} ms)"
    )


Setting = Callable[[str], int]  # another setting's validated value, by its variable


@dataclass(frozen=True)
class InvocationLimit:
    """One bound on what a runner invocation (a tick, a clock's alarm) may spend.

    `name` is its allowance's keyword in `Budget` and `spent` what counts toward it (a
    keyword of `Budget.allows`, a key of `Engine.spent`). `variable` configures it: a
    positive integer, `default` when unset. `fits` says what is wrong with a value beside
    the other settings (None: nothing). `ends_at_allowance`: reaching the allowance already
    ends the invocation (time), rather than being the last allowed (a count). When the
    platform enforces it too, `refused_as` is the `LimitReached` kind its refusal becomes,
    recognised by `refusal` (a regular expression, case ignored, over workerd's error text),
    and the least an earlier invocation was refused at lowers the allowance of later ones."""

    name: str
    variable: str
    default: int
    spent: str
    fits: Callable[[Setting], str | None]
    ends_at_allowance: bool = False
    refused_as: str | None = None
    refusal: str | None = None

    def allows(self, spent: int, allowance: int) -> bool:
        return spent < allowance if self.ends_at_allowance else spent <= allowance


def _ends_before_the_lease(setting: Setting) -> str | None:
    lease_ms = setting("LEASE_MS")
    if setting("TICK_BUDGET_MS") < lease_ms:
        return None
    return f"must be less than LEASE_MS ({lease_ms})"


def _fits_one_batch_of_queries(setting: Setting) -> str | None:
    rows = setting("MAX_ROWS_PER_BATCH")
    one_batch = minimum_queries_per_tick(rows)
    if one_batch <= setting("MAX_D1_QUERIES_PER_TICK"):
        return None
    return (
        f"must be at least {one_batch} for MAX_ROWS_PER_BATCH={rows}: one batch must fit in a tick"
    )


def _fits_one_batch_of_sends(setting: Setting) -> str | None:
    rows = setting("MAX_ROWS_PER_BATCH")
    if rows <= setting("MAX_SENDS_PER_TICK"):
        return None
    return f"must be at least MAX_ROWS_PER_BATCH ({rows})"


# No new batch starts after this much of an invocation (the platform allows 15 minutes of
# wall time to a Cron Trigger or an alarm).
TICK_TIME = InvocationLimit(
    name="ms",
    variable="TICK_BUDGET_MS",
    default=45_000,
    spent="elapsed_ms",
    fits=_ends_before_the_lease,
    ends_at_allowance=True,
)
# D1 statements one invocation may send (the platform: 1,000 D1 queries per invocation on
# Workers Paid, 50 on Free).
D1_QUERIES = InvocationLimit(
    name="queries",
    variable="MAX_D1_QUERIES_PER_TICK",
    default=1_000,
    spent="statements",
    fits=_fits_one_batch_of_queries,
    refused_as="d1",
    # D1, and any call to a Cloudflare service from a binding, past the invocation's allowance.
    refusal=r"too many api requests by single worker invocation",
)
# Subrequests one invocation may make: commands, deliveries, calls to clocks (the platform:
# 50 per invocation on Workers Free; 10,000 by default on Paid, configurable).
SUBREQUESTS = InvocationLimit(
    name="sends",
    variable="MAX_SENDS_PER_TICK",
    default=1_000,
    spent="sends",
    fits=_fits_one_batch_of_sends,
    refused_as="subrequests",
    # `fetch` past the subrequest limit (newer runtimes add where to configure it).
    refusal=r"too many subrequests",
)
INVOCATION_LIMITS = (TICK_TIME, D1_QUERIES, SUBREQUESTS)


def refused_as(kind: str) -> InvocationLimit:
    """The invocation limit a platform refusal (`LimitReached.kind`) is of."""
    [limit] = [limit for limit in INVOCATION_LIMITS if limit.refused_as == kind]
    return limit


# -- calls that cost someone else ------------------------------------------------------------------

WINDOW_MS = 60_000


@dataclass(frozen=True)
class CallLimit:
    """How many calls a minute, and at once, a caller may make."""

    per_minute: int
    at_once: int | None = None  # calls under way at once; None: no limit
    # How long a call counts as under way unless it ends sooner (it outlives a runtime that
    # died mid-call by no more than this).
    hold_ms: int = 0


@dataclass(frozen=True)
class Call:
    """One call counted against a limit: when it started, until when it counts as busy."""

    started_at: int
    busy_until: int


def wait_ms(limit: CallLimit, calls: Iterable[Call], now: int) -> int:
    """0 when a new call may start at `now`, else how long until one may: until enough
    calls have left the minute, and enough of those under way have ended."""
    calls = list(calls)
    waits = [0]
    recent = sorted(call.started_at for call in calls if call.started_at > now - WINDOW_MS)
    if len(recent) >= limit.per_minute:
        waits.append(recent[len(recent) - limit.per_minute] + WINDOW_MS - now)
    if limit.at_once is not None:
        busy = sorted(call.busy_until for call in calls if call.busy_until > now)
        if len(busy) >= limit.at_once:
            waits.append(busy[len(busy) - limit.at_once] - now)
    return max(waits)


def retry_after_seconds(ms: int) -> int:
    """A wait as `Retry-After` says it: whole seconds, rounded up, at least one."""
    return max(1, -(-ms // 1000))
