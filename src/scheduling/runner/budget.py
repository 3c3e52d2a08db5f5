"""What one invocation of the runner (a tick, or a clock's alarm) may spend: time before new
work starts, D1 statements, and subrequests (requests to Dee Wan and to webhook endpoints,
and calls to the installations' clocks)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.services import Services


@dataclass(frozen=True)
class Budget:
    """Time before a new batch starts, D1 statements and subrequests, each checked against
    the next batch at its most expensive."""

    ms: int
    queries: int
    sends: int
    reserved_queries: int = 1  # statements written last (the invocation's record)

    @classmethod
    def of(cls, services: Services, *, reserved_queries: int = 1) -> Budget:
        """The configured budgets, lowered to a platform limit an earlier invocation of this
        isolate met (an operator on Workers Free who never set the 50s)."""
        config = services.config
        met = services.limits_met
        queries, sends = config.max_d1_queries_per_tick, config.max_sends_per_tick
        return cls(
            ms=config.tick_budget_ms,
            queries=min(queries, met.get("d1", queries)),
            sends=min(sends, met.get("subrequests", sends)),
            reserved_queries=reserved_queries,
        )

    def allows(self, *, elapsed_ms: int, statements: int, sends: int) -> bool:
        """Whether work that would bring the invocation to `statements` D1 statements (the
        reserved ones not included) and `sends` subrequests may start `elapsed_ms` in."""
        return (
            elapsed_ms < self.ms
            and statements + self.reserved_queries <= self.queries
            and sends <= self.sends
        )
