"""Failure injection: scripted faults consumed in order, plus an optional policy.

A fault that fakes a response answers *instead of* core, so nothing is applied.
`delay` and `apply_then_drop` let core process the call first: the outcome
happened, the plugin just does not (promptly) learn about it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from fake_core.wire import Reply, json_reply

FaultKind = Literal[
    "respond",  # any status with any code (it need not match the status)
    "delay",  # process normally, hold the answer delay_s
    "timeout",  # never answer; not applied
    "apply_then_drop",  # process (apply), then close the connection without answering
    "bad_json",  # a JSON content type with a body that does not parse
    "redirect",  # a 3xx with Location
    "html_5xx",  # a non-JSON error page
]
FAULT_KINDS: tuple[str, ...] = (
    "respond",
    "delay",
    "timeout",
    "apply_then_drop",
    "bad_json",
    "redirect",
    "html_5xx",
)
ENDPOINTS = ("exchange", "content", "transitions", "*")
_FAKED = {"respond", "bad_json", "redirect", "html_5xx"}


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    status: int = 0
    code: str | None = None
    retry_after: str | None = None  # seconds or an HTTP-date, sent as is
    delay_s: float = 0.0
    location: str | None = None
    body: bytes | None = None  # overrides the faked body

    @classmethod
    def respond(
        cls,
        status: int,
        code: str | None,
        *,
        retry_after: int | str | None = None,
        delay_s: float = 0.0,
        body: bytes | None = None,
    ) -> Fault:
        after = None if retry_after is None else str(retry_after)
        return cls("respond", status, code, after, delay_s, body=body)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        return cls("delay", delay_s=seconds)

    @classmethod
    def timeout(cls) -> Fault:
        return cls("timeout")

    @classmethod
    def apply_then_drop(cls) -> Fault:
        return cls("apply_then_drop")

    @classmethod
    def bad_json(cls, status: int = 200) -> Fault:
        return cls("bad_json", status)

    @classmethod
    def redirect(cls, status: int = 302, location: str = "https://elsewhere.example/") -> Fault:
        return cls("redirect", status, location=location)

    @classmethod
    def html_5xx(cls, status: int = 502) -> Fault:
        return cls("html_5xx", status)

    @property
    def fakes_response(self) -> bool:
        return self.kind in _FAKED

    def reply(self) -> Reply:
        """The faked answer (only for kinds that fake one)."""
        if self.kind == "respond":
            reply = json_reply(self.status, {} if self.code is None else {"code": self.code})
        elif self.kind == "bad_json":
            reply = Reply(self.status, {"content-type": "application/json"}, b'{"code": "tra')
        elif self.kind == "redirect":
            reply = Reply(self.status, {"location": self.location or "/"}, b"")
        else:
            page = f"<html><body><h1>{self.status} Bad Gateway</h1></body></html>"
            reply = Reply(self.status, {"content-type": "text/html"}, page.encode())
        if self.body is not None:
            reply.body = self.body
        if self.retry_after is not None:
            reply.headers["retry-after"] = self.retry_after
        reply.delay_s = self.delay_s
        return reply

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for name in ("status", "code", "retry_after", "delay_s", "location"):
            value = getattr(self, name)
            if value:
                data[name] = value
        if self.body is not None:
            data["body"] = self.body.decode("utf-8", "replace")
        return data

    @classmethod
    def from_json(cls, data: Any) -> Fault:
        """Build from the control API's JSON; raises ValueError when malformed."""
        if not isinstance(data, dict) or data.get("kind") not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(FAULT_KINDS)}")
        try:
            body = data.get("body")
            retry_after = data.get("retry_after")
            return cls(
                kind=cast(FaultKind, data["kind"]),
                status=int(data.get("status", _DEFAULT_STATUS.get(data["kind"], 0))),
                code=data.get("code"),
                retry_after=None if retry_after is None else str(retry_after),
                delay_s=float(data.get("delay_s", 0.0)),
                location=data.get("location"),
                body=None if body is None else str(body).encode(),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad fault: {exc}") from exc


_DEFAULT_STATUS = {"bad_json": 200, "redirect": 302, "html_5xx": 502}


@dataclass(frozen=True)
class FaultContext:
    """What a policy sees about a call before it is processed."""

    seq: int
    endpoint: str
    method: str
    path: str
    content_id: str | None
    at_ms: int = 0  # the core's clock when the call came


Policy = Callable[[FaultContext], Fault | None]


@dataclass
class _Scripted:
    fault: Fault
    endpoint: str
    content_id: str | None
    remaining: int


class Faults:
    def __init__(self) -> None:
        self._queue: list[_Scripted] = []
        self.policy: Policy | None = None
        self.latency_s: dict[str, float] = {}  # endpoint -> delay on every call
        self.down_until_ms: int | None = None  # every call answers 503 until then

    def push(
        self,
        fault: Fault,
        *,
        endpoint: str = "transitions",
        content_id: str | None = None,
        times: int = 1,
    ) -> None:
        """Queue `fault` for the next `times` matching calls (after earlier entries)."""
        if endpoint not in ENDPOINTS:
            raise ValueError(f"endpoint must be one of {ENDPOINTS}")
        self._queue.append(_Scripted(fault, endpoint, content_id, times))

    def pending(self) -> list[dict[str, Any]]:
        return [
            {
                "fault": s.fault.to_json(),
                "endpoint": s.endpoint,
                "content_id": s.content_id,
                "remaining": s.remaining,
            }
            for s in self._queue
        ]

    def clear(self) -> None:
        self._queue.clear()
        self.policy = None
        self.latency_s.clear()
        self.down_until_ms = None

    def down_for(self, minutes: float, now_ms: int) -> int:
        """Answer every call 503 `unavailable` for `minutes` from `now_ms`; returns until when."""
        self.down_until_ms = now_ms + int(minutes * 60_000)
        return self.down_until_ms

    def is_down(self, now_ms: int) -> bool:
        return self.down_until_ms is not None and now_ms < self.down_until_ms

    def set_latency(self, seconds: float, endpoint: str = "transitions") -> None:
        self.latency_s[endpoint] = seconds

    def take(self, context: FaultContext) -> Fault | None:
        if self.is_down(context.at_ms):
            return DOWN
        for entry in self._queue:
            if entry.endpoint not in ("*", context.endpoint):
                continue
            if entry.content_id is not None and entry.content_id != context.content_id:
                continue
            entry.remaining -= 1
            if entry.remaining <= 0:
                self._queue.remove(entry)
            return entry.fault
        return self.policy(context) if self.policy else None

    def with_latency(self, fault: Fault | None, endpoint: str) -> Fault | None:
        """Add the endpoint's fixed latency on top of whatever the call gets."""
        latency = self.latency_s.get(endpoint, 0.0) + self.latency_s.get("*", 0.0)
        if not latency:
            return fault
        if fault is None:
            return Fault.delay(latency)
        return replace(fault, delay_s=fault.delay_s + latency)


# What every call gets while the core is down for a while (`Faults.down_for`).
DOWN = Fault.respond(503, "unavailable")

SOAK_FAULTS: tuple[Fault, ...] = (
    Fault.respond(503, "unavailable"),
    Fault.respond(500, "internal_error"),
    Fault.respond(502, "bad_gateway"),
    Fault.respond(429, "rate_limited", retry_after=1),
    Fault.timeout(),
    Fault.apply_then_drop(),
    Fault.html_5xx(504),
)


class RandomFaults:
    """A seeded policy for soak runs: the same seed gives the same fault sequence."""

    def __init__(
        self,
        seed: int | str,
        rate: float = 0.3,
        choices: Sequence[Fault] = SOAK_FAULTS,
        endpoints: Sequence[str] = ("transitions",),
    ) -> None:
        self.rng = random.Random(seed)
        self.rate = rate
        self.choices = tuple(choices)
        self.endpoints = tuple(endpoints)

    def __call__(self, context: FaultContext) -> Fault | None:
        if context.endpoint not in self.endpoints and "*" not in self.endpoints:
            return None
        if self.rng.random() >= self.rate:
            return None
        return self.rng.choice(self.choices)


def describe(fault: Fault | None) -> str:
    return "none" if fault is None else json.dumps(fault.to_json(), sort_keys=True)
