"""What a handler or a tick may use: configuration and the ports, built once per runtime."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduling.config import Configuration
from scheduling.launch_throttle import (
    LAUNCH_FAILURES_PER_MINUTE,
    WINDOW_MS,
    LaunchThrottle,
    MemoryRateLimiter,
)
from scheduling.ports import (
    Clock,
    Crypto,
    Database,
    HttpClient,
    QueueProducer,
    RateLimiter,
    ScheduleClocks,
)

log = logging.getLogger("scheduling")


@dataclass
class Services:
    config: Configuration
    db: Database
    http: HttpClient
    clock: Clock
    make_crypto: Callable[[bytes], Crypto]
    # Jitter source for retry backoff; tests pass a seeded Random.
    rng: random.Random = field(default_factory=random.Random)
    # Counts failed launch exchanges (Workers' binding); None: counted in memory here.
    rate_limiter: RateLimiter | None = None
    # With a queue, a tick dispatches what is due to the queue's consumers instead of sending.
    queue: QueueProducer | None = None
    # With an alarm clock per installation, each wakes at its due seconds and the cron's
    # tick is the watchdog; None: the cron is the only clock.
    clocks: ScheduleClocks | None = None
    # What an invocation of this process or isolate had used when a platform limit refused
    # it ("d1" statements, "subrequests"): later invocations budget below it.
    limits_met: dict[str, int] = field(default_factory=dict)
    _crypto: Crypto | None = field(default=None, init=False, repr=False)
    _launch_throttle: LaunchThrottle | None = field(default=None, init=False, repr=False)

    @property
    def crypto(self) -> Crypto:
        """Built on first use, so a bad TOKEN_KEY fails only the requests that need it."""
        if self._crypto is None:
            self._crypto = self.make_crypto(self.config.token_key)
        return self._crypto

    @property
    def launch_throttle(self) -> LaunchThrottle:
        """One per App, so what it remembers lasts as long as the process or the isolate."""
        if self._launch_throttle is None:
            limiter = self.rate_limiter or MemoryRateLimiter(
                LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, self.clock
            )
            self._launch_throttle = LaunchThrottle(limiter, self.clock)
        return self._launch_throttle
