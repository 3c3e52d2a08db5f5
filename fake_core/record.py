"""The record of every protocol call core received, for tests to assert on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fake_core.faults import Fault
from fake_core.wire import header


@dataclass
class Call:
    seq: int
    at_ms: int
    method: str
    path: str
    endpoint: str  # exchange | content | transitions | other
    headers: dict[str, str]  # as received, names in their original case
    body: Any  # the parsed JSON body, None when absent or not JSON
    raw_body: bytes
    status: int | None = None  # None when nothing was answered (timeout/drop)
    code: str | None = None
    fault: Fault | None = None
    applied: bool = False  # a transition was applied by this call
    outcome: str = "answered"  # answered | dropped | timed_out | client_gave_up

    def header(self, name: str) -> str | None:
        return header(self.headers, name)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at_ms": self.at_ms,
            "method": self.method,
            "path": self.path,
            "endpoint": self.endpoint,
            "headers": self.headers,
            "body": self.body,
            "status": self.status,
            "code": self.code,
            "fault": None if self.fault is None else self.fault.to_json(),
            "applied": self.applied,
            "outcome": self.outcome,
        }


@dataclass
class CallLog:
    calls: list[Call] = field(default_factory=list)
    _seq: int = 0  # keeps increasing across clear(), so seq stays unique

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def add(self, call: Call) -> Call:
        self.calls.append(call)
        return call

    def of(self, endpoint: str) -> list[Call]:
        return [call for call in self.calls if call.endpoint == endpoint]

    def clear(self) -> None:
        self.calls.clear()
