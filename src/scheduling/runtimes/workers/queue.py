"""Cloudflare Queues through the `workers` SDK: the `SEND_QUEUE` producer binding as the
core's `QueueProducer`, and a delivered message as its `QueueMessage`.

The SDK's env wrapper recognises the producer by its JS class (`WorkerQueue`) and converts
the Python list of `{"body": …}` dicts to JS objects; a consumer's batch reaches `queue()`
wrapped the same way, each message's `body` a dict again. A `sendBatch` the invocation may
not make (its calls to services are used up) is `LimitReached`; any other refusal is
`QueueUnavailable`. Both mean nothing of the batch is known to be enqueued.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyodide.ffi import JsException

from scheduling.limits import MAX_MESSAGES_PER_SEND
from scheduling.ports import QueueUnavailable
from scheduling.runtimes.workers.platform_limits import refusal


class WorkersQueue:
    def __init__(self, binding: Any) -> None:
        self._binding = binding

    async def send_batch(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        if len(bodies) > MAX_MESSAGES_PER_SEND:
            raise QueueUnavailable(f"sendBatch takes at most {MAX_MESSAGES_PER_SEND} messages")
        try:
            await self._binding.sendBatch([{"body": dict(body)} for body in bodies])
        except JsException as exc:
            failed = QueueUnavailable(getattr(exc, "name", "sendBatch failed"))
            raise refusal(str(exc), failed) from None


class WorkersMessage:
    """One message of the batch handed to `queue()`."""

    def __init__(self, message: Any) -> None:
        self._message = message
        self.id = str(message.id)
        self.body = _plain(message.body)
        attempts = getattr(message, "attempts", None)
        self.attempts = int(attempts) if isinstance(attempts, int | float) else 1

    def ack(self) -> None:
        self._message.ack()

    def retry(self, delay_s: int) -> None:
        self._message.retry({"delaySeconds": delay_s})


def _plain(value: Any) -> Any:
    """The SDK hands JS objects over as dicts (its own subclass); the core reads plain ones."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
