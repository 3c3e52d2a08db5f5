"""Send lateness (how long after `due_at` a request left) as the operator reads it: nearest-rank
percentiles of one tick, and histogram buckets with fixed bounds.

The bounds never change, so each tick's bucket counts can be stored and added up: the
histogram over any window of the history (or over all time, in the running totals) is a
sum, never a re-read of the sends.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

# Upper bounds (ms) and the names their counts are stored under; the last bucket (+Inf) is
# every send. From a quarter second to the default lateness cap (15 minutes).
BOUNDS_MS: tuple[int, ...] = (
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    900_000,
)


def bound_name(bound_ms: int) -> str:
    """`250ms`, `1s`, `2500ms`: whole seconds in seconds, anything else in milliseconds."""
    return f"{bound_ms // 1000}s" if bound_ms % 1000 == 0 else f"{bound_ms}ms"


BUCKET_COLUMNS: tuple[str, ...] = tuple(f"lateness_le_{bound_name(b)}" for b in BOUNDS_MS)


def percentile(ordered: Sequence[int], fraction: float) -> int:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it
    (0 for none). The median of an even count is its lower middle value."""
    if not ordered:
        return 0
    rank = max(1, -(-round(fraction * 1_000_000) * len(ordered) // 1_000_000))
    return ordered[rank - 1]


def cumulative_buckets(ordered: Sequence[int]) -> tuple[int, ...]:
    """How many values are at most each bound, for sorted `ordered` (Prometheus's `le`)."""
    return tuple(bisect_left(ordered, bound + 1) for bound in BOUNDS_MS)
