"""Which errors are the platform's per-invocation limits, by the texts workerd gives them:
each of `limits.INVOCATION_LIMITS` the platform enforces names its text (`refusal`), e.g.

- D1 (and any call to a Cloudflare service from a binding) past the invocation's allowance
  (50 D1 queries on Workers Free, 1,000 on Paid; 1,000 calls to services):
  `Too many API requests by single Worker invocation.`
- `fetch` past the subrequest limit (50 on Free): `Too many subrequests by single Worker
  invocation.`, which newer runtimes follow with `To configure this limit, refer to
  https://developers.cloudflare.com/workers/platform/limits/`.

Case varies between releases ("worker invocation"), so the match ignores it. The adapters
(`d1.py`, `fetch_client.py`, `schedule_clock.py`) turn a match into the port's `LimitReached`,
which the runner treats as the end of this invocation's allowance, not as a failure.

Imports no `js`, `pyodide` or `workers`, so it is tested under CPython too.
"""

from __future__ import annotations

import re

from scheduling.limits import INVOCATION_LIMITS
from scheduling.ports import LimitReached

_REFUSALS = tuple(
    (re.compile(limit.refusal, re.IGNORECASE), limit.refused_as)
    for limit in INVOCATION_LIMITS
    if limit.refusal is not None and limit.refused_as is not None
)


def limit_of(message: str) -> LimitReached | None:
    """The limit an error's text names, or None for any other error."""
    for text, kind in _REFUSALS:
        if text.search(message):
            return LimitReached(kind)
    return None


def refusal(message: str, otherwise: Exception) -> Exception:
    """What a binding's error means to the core: the limit its text names, or `otherwise`."""
    return limit_of(message) or otherwise
