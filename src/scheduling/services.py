"""What a handler or a tick may use: configuration and the ports, built once per runtime."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduling.config import Configuration
from scheduling.ports import Clock, Crypto, Database, HttpClient

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
    _crypto: Crypto | None = field(default=None, init=False, repr=False)

    @property
    def crypto(self) -> Crypto:
        """Built on first use, so a bad TOKEN_KEY fails only the requests that need it."""
        if self._crypto is None:
            self._crypto = self.make_crypto(self.config.token_key)
        return self._crypto
