"""Every call the plugin makes to a webhook endpoint: one signed POST, its answer judged.

The request is signed for this attempt (Standard Webhooks headers), given 10 s
from the moment it holds a connection slot, never follows a redirect, and
reads at most 64 KiB of the answer. Nothing an endpoint answers, or fails to,
makes this raise: one attempt, one `AttemptResult`. Only the platform's subrequest limit
does (`LimitReached`), and then no request left.
"""

from __future__ import annotations

from scheduling.domain import delivery_policy, webhook_signing
from scheduling.domain.delivery_policy import AttemptResult
from scheduling.ports import (
    Crypto,
    HttpClient,
    LimitReached,
    OutboundRequest,
    OutboundResponse,
    TransportError,
)
from scheduling.services import log

USER_AGENT = "Scheduling-Webhooks/1 (Dee Wan plugin)"


async def post_event(
    http: HttpClient,
    crypto: Crypto,
    url: str,
    secret: str,
    message_id: str,
    body: bytes,
    now_ms: int,
) -> AttemptResult:
    headers = await webhook_signing.signed_headers(crypto, secret, message_id, now_ms, body)
    request = OutboundRequest(
        "POST",
        url,
        {**headers, "user-agent": USER_AGENT},
        body,
        delivery_policy.TIMEOUT_MS / 1000,
        delivery_policy.MAX_ANSWER_BYTES,
    )
    answer: OutboundResponse | TransportError
    try:
        answer = await http.send(request)
    except TransportError as exc:
        answer = exc
    except LimitReached:
        raise  # nothing was sent: the runner hands the delivery back
    except Exception as exc:
        # An adapter broke its contract: to this delivery, the request got no answer.
        log.error("webhook send failed unexpectedly: %s", type(exc).__name__)
        answer = TransportError(type(exc).__name__)
    return delivery_policy.classify(answer)
