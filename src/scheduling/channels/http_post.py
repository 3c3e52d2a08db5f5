"""One POST to an endpoint, whatever the channel: given 10 s from the moment it holds a
connection slot, never following a redirect, reading at most 64 KiB of the answer, and
judged by the delivery table. Nothing an endpoint answers, or fails to, makes it raise; only
the platform's subrequest limit does (`LimitReached`), and then no request left.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.domain import delivery_policy
from scheduling.domain.delivery_policy import AttemptResult
from scheduling.ports import HttpClient, OutboundRequest, answer_to

USER_AGENT = "Scheduling-Webhooks/1 (Dee Wan plugin)"


async def post(
    http: HttpClient, url: str, headers: Mapping[str, str], body: bytes, now_ms: int
) -> AttemptResult:
    request = OutboundRequest(
        "POST",
        url,
        {**headers, "user-agent": USER_AGENT},
        body,
        delivery_policy.TIMEOUT_MS / 1000,
        delivery_policy.MAX_ANSWER_BYTES,
    )
    answer = await answer_to(http, request, "notification send")
    return delivery_policy.classify(answer, now_ms=now_ms)
