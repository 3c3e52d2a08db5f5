"""What a handler or a tick may use: configuration and the ports, built once per runtime."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from scheduling.config import Configuration
from scheduling.failure_throttle import (
    LAUNCH_FAILURES_PER_MINUTE,
    WINDOW_MS,
    FailureThrottle,
    MemoryRateLimiter,
)
from scheduling.ports import Clock, Crypto, Database, HttpClient, RateLimiter, ScheduleClocks

log = logging.getLogger("scheduling")


@dataclass
class Services:
    """What the core runs on: configuration, database, HTTP, clock, crypto and randomness."""

    config: Configuration
    db: Database
    http: HttpClient
    clock: Clock
    make_crypto: Callable[[bytes], Crypto]
    # Jitter source for retry backoff; tests pass a seeded Random.
    rng: random.Random = field(default_factory=random.Random)
    # Counts failed launch exchanges and operator sign-ins (Workers' binding); None: counted
    # in memory here.
    rate_limiter: RateLimiter | None = None
    # Calls a visitor can trigger (a test event, later a replay) go out through a pool of
    # their own where the runtime has one, so none can keep Dee Wan's or the runner's calls
    # waiting for a connection; None: `http` (on Workers each invocation has its own).
    visitor_http: HttpClient | None = None
    # With an alarm clock per installation, each wakes at its due seconds and the cron's
    # tick is the watchdog; None: the cron is the only clock.
    clocks: ScheduleClocks | None = None
    # What an invocation of this process or isolate had used when a platform limit refused
    # it ("d1" statements, "subrequests"): later invocations budget below it.
    limits_met: dict[str, int] = field(default_factory=dict)
    # When this process or isolate last found its database's migrations all known to its code
    # (`runner/invocation.py` asks again five minutes later: a deploy may migrate it meanwhile).
    schema_known_at: int | None = None
    _crypto: Crypto | None = field(default=None, init=False, repr=False)
    _failure_throttle: FailureThrottle | None = field(default=None, init=False, repr=False)

    @property
    def crypto(self) -> Crypto:
        """Built on first use, so a bad TOKEN_KEY fails only the requests that need it."""
        if self._crypto is None:
            self._crypto = self.make_crypto(self.config.token_key)
        return self._crypto

    @property
    def http_for_visitors(self) -> HttpClient:
        return self.visitor_http or self.http

    def for_visitors(self) -> Services:
        """These services with the visitors' pool as their outbound HTTP: for the calls a
        visitor triggers (a test event, a delivery sent again)."""
        return replace(self, http=self.http_for_visitors)

    @property
    def failure_throttle(self) -> FailureThrottle:
        """Failed launch exchanges and operator sign-ins, each by its own keys: one per App,
        so what it remembers lasts as long as the process or the isolate."""
        if self._failure_throttle is None:
            limiter = self.rate_limiter or MemoryRateLimiter(
                LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, self.clock
            )
            self._failure_throttle = FailureThrottle(limiter, self.clock)
        return self._failure_throttle
