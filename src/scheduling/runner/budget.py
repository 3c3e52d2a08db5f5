"""What one invocation of the runner (a tick, or a clock's alarm) may spend: an allowance for
each of `limits.INVOCATION_LIMITS` (time before new work starts, D1 statements, and
subrequests: requests to Dee Wan and to notification endpoints, and calls to the installations'
clocks)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.limits import D1_QUERIES, INVOCATION_LIMITS, InvocationLimit
from scheduling.services import Services


@dataclass(init=False)
class Budget:
    """An allowance per invocation limit, by its name (`ms`, `queries`, `sends`), each
    checked against the next batch at its most expensive; `reserved_queries` D1 statements
    are held back for what is written last (the invocation's record)."""

    allowed: dict[str, int]
    reserved_queries: int

    def __init__(self, *, reserved_queries: int = 1, **allowed: int) -> None:
        missing = {limit.name for limit in INVOCATION_LIMITS} - allowed.keys()
        if missing:
            raise TypeError(f"no allowance for {', '.join(sorted(missing))}")
        self.allowed = allowed
        self.reserved_queries = reserved_queries

    @classmethod
    def of(cls, services: Services, *, reserved_queries: int = 1) -> Budget:
        """The configured allowances, each lowered to a platform limit an earlier invocation
        of this isolate met (an operator on Workers Free who never set the 50s)."""
        config, met = services.config, services.limits_met
        allowed = {}
        for limit in INVOCATION_LIMITS:
            figure = config.allowance(limit)
            if limit.refused_as is not None:
                figure = min(figure, met.get(limit.refused_as, figure))
            allowed[limit.name] = figure
        return cls(reserved_queries=reserved_queries, **allowed)

    def allowance(self, limit: InvocationLimit) -> int:
        return self.allowed[limit.name]

    def allows(self, **spent: int) -> bool:
        """Whether work that would bring the invocation to what `spent` says of each limit
        (by `InvocationLimit.spent`: `elapsed_ms`, `statements` with the reserved ones not
        included, `sends`) may start. A limit `spent` does not name is not one this work
        spends toward (the engine's checks name them all: `Engine.allows`)."""
        unknown = spent.keys() - {limit.spent for limit in INVOCATION_LIMITS}
        if unknown:
            raise TypeError(f"no invocation limit counts {', '.join(sorted(unknown))}")
        if D1_QUERIES.spent in spent:
            spent[D1_QUERIES.spent] += self.reserved_queries
        return all(
            limit.allows(spent[limit.spent], self.allowance(limit))
            for limit in INVOCATION_LIMITS
            if limit.spent in spent
        )
