"""The log of transition commands core received, as the home page lists them.

One `ReceivedTransition` per call to §6, made when core answers and kept in
the state (so `--state FILE` keeps it across restarts, the last
`RECEIVED_LIMIT`). Unlike the call record, it holds no headers and no token:
only what a person reads in the log.
"""

from __future__ import annotations

import json
import re

from fake_core.record import Call
from fake_core.state import CoreState, ReceivedTransition
from fake_core.wire import bearer

_KEY_INSTALLATION = re.compile(r"sched:([A-Za-z0-9_-]{1,64}):")  # protocol v1 §6 key shape
_SHOWN_CHARS = 120  # of a value taken from the body: enough for any id, bounded for a hostile one


def entry_for(state: CoreState, call: Call) -> ReceivedTransition:
    body = call.body if isinstance(call.body, dict) else {}
    return ReceivedTransition(
        at_ms=call.at_ms,
        content_id=_text(body.get("content_id")),
        kind=_text(body.get("kind")),
        version_id=_text(body.get("version_id")),
        answer=answer(call),
        applied=call.applied,
        installation_id=_sender(state, call),
    )


def answer(call: Call) -> str:
    """What core answered, in a few words: `200 transition_applied`, or why nothing came."""
    if call.outcome == "timed_out":
        return "no answer (held until the plugin gave up; not processed)"
    if call.outcome == "dropped":
        return "no answer (connection dropped after processing)"
    answered = f"{call.status} {call.code or '(no code)'}"
    if call.fault is not None and call.fault.fakes_response:
        answered += f" (injected {call.fault.kind} fault; not processed)"
    if call.outcome == "client_gave_up":
        answered += " (the plugin stopped waiting)"
    return answered


def _text(value: object) -> str:
    if value is None:
        return "—"
    shown = value if isinstance(value, str) else json.dumps(value)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 1] + "…"


def _sender(state: CoreState, call: Call) -> str | None:
    """The installation whose token it was, else the one its Idempotency-Key names."""
    token = bearer(call.headers)
    for installation in state.installations.values():
        if token is not None and installation.token == token:
            return installation.id
    match = _KEY_INSTALLATION.match(call.header("Idempotency-Key") or "")
    if match is not None and match.group(1) in state.installations:
        return match.group(1)
    return None
