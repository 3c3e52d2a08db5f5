"""Contents' titles read live from Dee Wan for a page, a few at a time and within one budget.

Titles are never stored: the plugin keeps no content snapshots. A read that fails or
does not come back in time leaves its content's id on the page, and the page says
how many and why (`Titles.late`, `Titles.failed`), so a slow Dee Wan is not silent.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from scheduling.actions.access import Access, read_content_with
from scheduling.concurrency import gather_limited
from scheduling.dee_wan import UNAVAILABLE, CoreError
from scheduling.domain.content import ContentRead
from scheduling.services import Services, log


@dataclass(frozen=True)
class Titles:
    """Content titles read from Dee Wan for a page, and how many reads failed or came late."""

    reads: dict[str, ContentRead | None]  # content id -> its read, None when not read
    late: int = 0  # reads the budget ran out on, or Dee Wan did not answer (slow or down)
    failed: int = 0  # reads Dee Wan refused, or answered in a way that cannot be trusted

    def title(self, content_id: str) -> str | None:
        read = self.reads.get(content_id)
        return read.content.title if read is not None else None


_LATE = "over the page's budget"


async def read_titles(
    services: Services, access: Access, content_ids: set[str], *, budget_s: float
) -> Titles:
    """Each content's read with the session's delegation; all the reads share `budget_s`,
    so a hanging Dee Wan cannot hold the page."""
    ids = sorted(content_ids)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s

    async def read_one(content_id: str) -> ContentRead | str:
        remaining = deadline - loop.time()
        if remaining <= 0:
            reason = _LATE
        else:
            try:
                return await asyncio.wait_for(
                    read_content_with(services, access, content_id), remaining
                )
            except CoreError as exc:
                reason = _LATE if exc.code == UNAVAILABLE else exc.code
            except TimeoutError:
                reason = _LATE
        log.info(
            "installation %s: title of %s not read: %s", access.installation.id, content_id, reason
        )
        return reason

    outcomes = await gather_limited(
        services.config.send_concurrency, [functools.partial(read_one, cid) for cid in ids]
    )
    reasons = [o for o in outcomes if isinstance(o, str)]
    return Titles(
        reads={
            cid: None if isinstance(o, str) else o for cid, o in zip(ids, outcomes, strict=True)
        },
        late=reasons.count(_LATE),
        failed=len(reasons) - reasons.count(_LATE),
    )
