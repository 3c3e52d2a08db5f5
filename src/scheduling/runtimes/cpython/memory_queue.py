"""Cloudflare Queues in one process, for `serve` with QUEUE_CONSUMERS and for tests: the same
producer port the Worker's `SEND_QUEUE` binding gives, and consumers that hand batches to the
same `App.consume` as the Worker's `queue()` handler, each batch its own invocation.

What it keeps of Queues (https://developers.cloudflare.com/queues/): delivery at least once;
batches of up to `max_batch_size` messages, delivered once that many are ready or
`max_batch_timeout_s` after the first; each message acknowledged or retried on its own,
`retry(delay)` bringing it back after the delay; a consumer that returns leaves its messages
acknowledged unless it retried them; one that fails (or is killed) leaves every message it did
not acknowledge to be delivered again after `retry_delay_s`; after `max_retries` retries a
message goes to the dead letters. Bodies go through JSON, as they would cross the wire.
Unlike Queues, what it holds is lost when the process stops: the next tick dispatches those
rows again once their dispatch mark is older than LEASE_MS.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduling.limits import MAX_MESSAGES_PER_SEND
from scheduling.ports import QueueMessage, QueueUnavailable
from scheduling.services import log

# The consumer in wrangler.example.jsonc (tests/test_queue_local.py keeps them equal).
MAX_BATCH_SIZE = 10
MAX_BATCH_TIMEOUT_S = 1.0
MAX_RETRIES = 100
RETRY_DELAY_S = 1.0
MAX_MESSAGE_BYTES = 128_000

Handler = Callable[[Sequence[QueueMessage]], Awaitable[Any]]


@dataclass
class _Stored:
    id: str
    body: str  # JSON, as sent
    attempts: int = 1
    ready_at: float = 0.0


class Delivered:
    """One message of one delivery, as a consumer sees it."""

    def __init__(self, stored: _Stored) -> None:
        self._stored = stored
        self._body = json.loads(stored.body)
        self.outcome: tuple[str, float] | None = None  # ("ack", 0) or ("retry", delay)

    @property
    def id(self) -> str:
        return self._stored.id

    @property
    def body(self) -> Any:
        return self._body

    @property
    def attempts(self) -> int:
        return self._stored.attempts

    def ack(self) -> None:
        if self.outcome is None:
            self.outcome = ("ack", 0.0)

    def retry(self, delay_s: int) -> None:
        if self.outcome is None:
            self.outcome = ("retry", float(delay_s))


@dataclass
class QueueStats:
    sent: int = 0
    deliveries: int = 0  # consumer invocations
    delivered: int = 0  # messages handed to consumers (a redelivery counts again)
    acked: int = 0
    retried: int = 0
    failed_deliveries: int = 0  # the consumer raised or was killed
    max_concurrent: int = 0  # the most deliveries under way at once
    dead_letters: list[Any] = field(default_factory=list)


class MemoryQueue:
    """A queue and its consumers. `send_batch` is the producer port; `start()` runs one
    consumer task per handler, each delivering one batch at a time to its own handler (as a
    Worker's consumer invocations each have their own connections)."""

    def __init__(
        self,
        handlers: Sequence[Handler],
        *,
        max_batch_size: int = MAX_BATCH_SIZE,
        max_batch_timeout_s: float = MAX_BATCH_TIMEOUT_S,
        max_retries: int = MAX_RETRIES,
        retry_delay_s: float = RETRY_DELAY_S,
        delay_scale: float = 1.0,
    ) -> None:
        if not handlers:
            raise ValueError("a queue needs at least one consumer")
        self.handlers = list(handlers)
        self.consumers = len(self.handlers)
        self.max_batch_size = max_batch_size
        self.max_batch_timeout_s = max_batch_timeout_s
        self.max_retries = max_retries
        self.retry_delay_s = retry_delay_s
        self.delay_scale = delay_scale  # tests shrink delays; 1.0 keeps Queues' seconds
        self.stats = QueueStats()
        self._waiting: list[_Stored] = []
        self._outstanding = 0  # sent and not yet acknowledged or dead-lettered
        self._ids = itertools.count(1)
        self._waiters: set[asyncio.Future[None]] = set()  # for the next send or settle
        self._tasks: list[asyncio.Task[None]] = []
        self._deliveries: set[asyncio.Task[Any]] = set()

    # -- producer ------------------------------------------------------------------------

    async def send_batch(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        if len(bodies) > MAX_MESSAGES_PER_SEND:
            raise QueueUnavailable(f"sendBatch takes at most {MAX_MESSAGES_PER_SEND} messages")
        encoded = [json.dumps(body, separators=(",", ":")) for body in bodies]
        if any(len(text.encode()) > MAX_MESSAGE_BYTES for text in encoded):
            raise QueueUnavailable("a message is larger than 128 KB")
        now = time.monotonic()
        for text in encoded:
            self._waiting.append(_Stored(f"msg-{next(self._ids)}", text, ready_at=now))
        self._outstanding += len(encoded)
        self.stats.sent += len(encoded)
        self._notify()

    # -- consumers -----------------------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._consume(handler), name=f"queue-consumer-{n}")
            for n, handler in enumerate(self.handlers)
        ]

    async def stop(self) -> None:
        """Stop the consumers; a delivery under way is cancelled (its messages are lost with
        the process, as the docstring says)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def idle(self) -> None:
        """Returns once every message sent is acknowledged or dead-lettered."""
        while self._outstanding:
            await self._wait_for_change(None)

    async def _wait_for_change(self, timeout_s: float | None) -> None:
        """Until something is sent or settled, or `timeout_s` passes. The waiter is in place
        before the first await, so a change right after the caller looked is never missed
        (a shared Event, cleared by one waiter while another had yet to wait, lost one)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait({waiter}, timeout=timeout_s)
        finally:
            self._waiters.discard(waiter)
            waiter.cancel()

    def _notify(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def _consume(self, handler: Handler) -> None:
        while True:
            batch = await self._next_batch()
            delivered = [Delivered(stored) for stored in batch]
            self.stats.deliveries += 1
            self.stats.delivered += len(delivered)
            delivery = asyncio.create_task(self._deliver(handler, delivered))
            self._deliveries.add(delivery)
            self.stats.max_concurrent = max(self.stats.max_concurrent, len(self._deliveries))
            try:
                failed = not await asyncio.shield(delivery)
            except asyncio.CancelledError:
                if not delivery.done():  # the queue is stopping
                    delivery.cancel()
                    raise
                failed = True  # the delivery itself was killed
            finally:
                self._deliveries.discard(delivery)
            self._settle(delivered, failed)

    async def _deliver(self, handler: Handler, delivered: list[Delivered]) -> bool:
        try:
            await handler(delivered)
        except Exception:
            log.exception("queue consumer failed; its unacknowledged messages come back")
            return False
        return True

    def deliveries(self) -> list[asyncio.Task[Any]]:
        """The deliveries under way (a test may cancel one, as a consumer killed mid-batch)."""
        return list(self._deliveries)

    async def _next_batch(self) -> list[_Stored]:
        """Up to `max_batch_size` ready messages: as soon as that many are ready, or
        `max_batch_timeout_s` after the first one was."""
        timeout_s = self.max_batch_timeout_s * self.delay_scale
        first_ready: float | None = None
        while True:
            now = time.monotonic()
            ready = [m for m in self._waiting if m.ready_at <= now]
            wake = [m.ready_at - now for m in self._waiting if m.ready_at > now]
            if ready:
                first_ready = now if first_ready is None else first_ready
                if len(ready) >= self.max_batch_size or now - first_ready >= timeout_s:
                    batch = ready[: self.max_batch_size]
                    taken = {id(m) for m in batch}
                    self._waiting = [m for m in self._waiting if id(m) not in taken]
                    return batch
                wake.append(first_ready + timeout_s - now)
            await self._wait_for_change(min(wake) if wake else None)

    def _settle(self, delivered: list[Delivered], failed: bool) -> None:
        if failed:
            self.stats.failed_deliveries += 1
        now = time.monotonic()
        for message in delivered:
            outcome = message.outcome or (("retry", self.retry_delay_s) if failed else ("ack", 0))
            stored = message._stored
            if outcome[0] == "ack":
                self.stats.acked += 1
                self._outstanding -= 1
            elif stored.attempts > self.max_retries:
                self.stats.dead_letters.append(json.loads(stored.body))
                self._outstanding -= 1
                log.warning("queue message %s dead-lettered", stored.id)
            else:
                self.stats.retried += 1
                stored.attempts += 1
                stored.ready_at = now + outcome[1] * self.delay_scale
                self._waiting.append(stored)
        self._notify()
