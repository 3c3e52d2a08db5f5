"""The Dee Wan client: every call the plugin makes to core (protocol §4–§6), and the plugin's
half of the plugin contract.

Each request is built here, with the one timeout, and its answer read within a size limit
and checked: §4–§5 answers against the protocol's shapes (anything else is
`CoreError("untrusted_response")`), a §6 answer classified by the Runner table. Nothing core
answers makes these functions raise anything else. `plugin_contract()` builds, from the
code's own tables, what `contract/plugin-contract.json` holds for core's contract test.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from scheduling import safe_json
from scheduling.domain.outcomes import (
    BACKOFF_BASE_MS,
    BACKOFF_CAP_MS,
    JITTER,
    REFUSAL_CODES,
    RULES,
    RUNNER_TABLE,
    SUCCESS_CODES,
    UNTRUSTED,
    AnswerRule,
    Outcome,
    OutcomeKind,
    Retry,
    outcome_of,
    parse_retry_after,
    rule_for,
)
from scheduling.domain.protocol import (
    CAPABILITIES,
    MANIFEST_VERSION,
    PLUGIN_ID,
    PLUGIN_NAME,
    PLUGIN_VERSION,
    PROTOCOL,
    ContentRead,
    LaunchExchange,
    WireModel,
)
from scheduling.domain.schedules import Command
from scheduling.domain.secrets import PROTOCOL_SECRETS, SHAPES
from scheduling.domain.times import rfc3339
from scheduling.domain.wording import explain
from scheduling.limits import REQUEST_TIMEOUT_MS
from scheduling.ports import (
    HttpClient,
    OutboundRequest,
    OutboundResponse,
    TransportError,
    TransportTimeout,
    answer_to,
)

log = logging.getLogger("scheduling")

ANSWER_LIMIT_BYTES = 1 << 20  # launch exchange and content read
# Dee Wan down or slow: no answer, a timeout, a 5xx or a 429 to a launch exchange or a
# content read. A temporary state, told apart from an answer that cannot be trusted.
UNAVAILABLE = "dee_wan_unavailable"
TRANSITION_ANSWER_LIMIT_BYTES = 64 << 10  # an answer to a transition is a few hundred bytes


class CoreError(Exception):
    """Core refused (its code), could not be reached, or answered something we cannot trust."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# -- §4–§5 calls -------------------------------------------------------------------------


@dataclass(frozen=True)
class CallCodes:
    """One Dee Wan call's codes (its section of the protocol): the status core sends each
    with, which the client checks an answer against, and what a person is told of a refusal
    where the call has words of its own (`told`; otherwise `wording.explain` of the code)."""

    section: int
    statuses: Mapping[str, int]
    told: Mapping[str, str] = field(default_factory=dict)


LAUNCH_EXCHANGE = CallCodes(
    4,
    {"invalid_request": 400, "plugin_unauthorized": 401, "launch_not_found": 404},
    told={
        "launch_not_found": (
            "This launch link was already used or has expired (links last 60 seconds)."
        ),
        "plugin_unauthorized": explain("plugin_unauthorized"),
    },
)
CONTENT_READ = CallCodes(
    5,
    {
        "plugin_unauthorized": 401,
        "requester_unauthorized": 403,
        "capability_refused": 403,
        "content_not_found": 404,
    },
)
# The transition's codes are the Runner table's (`domain/outcomes.py`): its rows decide.
TRANSITION = CallCodes(6, {**SUCCESS_CODES, **REFUSAL_CODES})

Answer = TypeVar("Answer", bound=WireModel)


def _request(
    method: str,
    url: str,
    headers: dict[str, str],
    body: object | None = None,
    *,
    max_body_bytes: int = ANSWER_LIMIT_BYTES,
) -> OutboundRequest:
    # Identity: both runtimes then read the bytes core sent (each still decodes a core
    # that compresses anyway, with the size limit on the decoded bytes).
    headers = {**headers, "accept": "application/json", "accept-encoding": "identity"}
    payload = None
    if body is not None:
        headers["content-type"] = "application/json"
        payload = json.dumps(body, separators=(",", ":")).encode()
    return OutboundRequest(method, url, headers, payload, REQUEST_TIMEOUT_MS / 1000, max_body_bytes)


async def _call(
    http: HttpClient, request: OutboundRequest, codes: CallCodes, answer: type[Answer]
) -> Answer:
    """Send; a listed error becomes its CoreError, no answer, a 5xx or a 429 `UNAVAILABLE`,
    anything else off-spec `untrusted_response`."""
    try:
        response = await http.send(request)
    except TransportError:
        raise CoreError(UNAVAILABLE) from None
    if response.status == 429 or 500 <= response.status <= 599:
        raise CoreError(UNAVAILABLE)
    if response.truncated:
        raise CoreError(UNTRUSTED)
    try:
        data = safe_json.loads(response.body, max_bytes=ANSWER_LIMIT_BYTES)
    except safe_json.UnsafeJson:
        raise CoreError(UNTRUSTED) from None
    code = data.get("code") if isinstance(data, dict) else None
    if response.status != 200:
        if isinstance(code, str) and codes.statuses.get(code) == response.status:
            raise CoreError(code)
        raise CoreError(UNTRUSTED)
    try:
        return answer.model_validate(data)
    except ValidationError:
        raise CoreError(UNTRUSTED) from None


async def exchange_launch(http: HttpClient, base_url: str, token: str, code: str) -> LaunchExchange:
    """§4: trade a launch code for the person, the context and a delegation."""
    request = _request(
        "POST",
        f"{base_url}/api/plugins/v1/launch/exchange",
        {"authorization": f"Bearer {token}"},
        {"code": code},
    )
    return await _call(http, request, LAUNCH_EXCHANGE, LaunchExchange)


async def read_content(
    http: HttpClient, base_url: str, token: str, delegation: str, content_id: str
) -> ContentRead:
    """§5: the content, its workflow as the delegated person sees it, and the site's zone."""
    request = _request(
        "GET",
        f"{base_url}/api/plugins/v1/content/{content_id}",
        {"authorization": f"Bearer {token}", "dee-wan-delegation": delegation},
    )
    return await _call(http, request, CONTENT_READ, ContentRead)


# -- §6 the transition command and its outcome ---------------------------------------------


def transition_request(base_url: str, command: Command, token: str) -> OutboundRequest:
    """§6. The body depends only on the stored schedule, so every retry is identical."""
    body = {
        "content_id": command.content_id,
        "kind": command.kind,
        "to": command.to_state,
        "version_id": command.version_id,
        "workflow_revision": command.workflow_revision,
        "requested_by": command.requested_by,
        "due_at": rfc3339(command.due_at),
    }
    return _request(
        "POST",
        f"{base_url}/api/plugins/v1/transitions",
        {"authorization": f"Bearer {token}", "idempotency-key": command.idempotency_key},
        body,
        max_body_bytes=TRANSITION_ANSWER_LIMIT_BYTES,
    )


async def send_transition(
    http: HttpClient, base_url: str, command: Command, token: str, clock: Callable[[], int]
) -> Outcome:
    """Send one command and classify the answer: one claim, one outcome. Raises only
    `LimitReached`, when the invocation may make no more subrequests (nothing was sent)."""
    request = transition_request(base_url, command, token)
    answer = await answer_to(http, request, "transition send")  # LimitReached: the claim goes back
    try:
        return classify(answer, now_ms=clock())
    except Exception as exc:
        log.error("transition answer could not be classified: %s", type(exc).__name__)
        status = answer.status if isinstance(answer, OutboundResponse) else None
        return Outcome(OutcomeKind.REFUSED, UNTRUSTED, status)


# A code from an answer is stored and shown only if it looks like one.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def classify(answer: OutboundResponse | TransportError, *, now_ms: int) -> Outcome:
    """The Runner table (docs/operators/runner.md): no answer, or an answer looked up by its
    status and code (`outcomes.rule_for`); an answer no row covers cannot be trusted."""
    if isinstance(answer, TransportTimeout):
        return _fixed("timeout")
    if isinstance(answer, TransportError):
        return _fixed("network_failure")
    status = answer.status
    if answer.truncated:
        return _fixed("untrusted", status)
    code = _code_of(answer.body)
    rule = rule_for(status, code)
    if rule is None:  # 3xx, other statuses, bad JSON, no code, or a code not its status's
        return _fixed("untrusted", status)
    retry_after = None
    if rule.retry is Retry.RETRY_AFTER:
        retry_after = parse_retry_after(answer.headers.get("retry-after"), now_ms=now_ms)
    return outcome_of(rule, code, status, retry_after)


def _fixed(answer: str, status: int | None = None) -> Outcome:
    """The outcome of a Runner table row that records its own code."""
    rule = RULES[answer]
    assert rule.result_code is not None
    return Outcome(rule.kind, rule.result_code, status)


def _code_of(body: bytes) -> str | None:
    try:
        data = safe_json.loads(body, max_bytes=TRANSITION_ANSWER_LIMIT_BYTES)
    except safe_json.UnsafeJson:
        return None
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) and _CODE.fullmatch(code) else None


# -- the plugin contract ---------------------------------------------------------------------------

CONTRACT_VERSION = 1


def plugin_contract() -> dict[str, Any]:
    return {
        "contract_version": CONTRACT_VERSION,
        "plugin": {"id": PLUGIN_ID, "name": PLUGIN_NAME, "version": PLUGIN_VERSION},
        "protocol": PROTOCOL,
        "manifest_version": MANIFEST_VERSION,
        "manifest_id": PLUGIN_ID,
        "capabilities": list(CAPABILITIES),
        # `length` counts the whole value, prefix included; the rest is base64url.
        "secret_shapes": {
            kind: {"prefix": SHAPES[kind].prefix, "length": SHAPES[kind].length}
            for kind in PROTOCOL_SECRETS
        },
        "runner": {
            "request_timeout_ms": REQUEST_TIMEOUT_MS,
            "backoff": {
                "base_ms": BACKOFF_BASE_MS,
                "cap_ms": BACKOFF_CAP_MS,
                "jitter": list(JITTER),
            },
            "table": [_row(rule) for rule in RUNNER_TABLE],
        },
    }


def _row(rule: AnswerRule) -> dict[str, Any]:
    """`codes` null: any code or none. `result_code` null: the code the answer carried."""
    return {
        "answer": rule.answer,
        "status": list(rule.statuses),
        "codes": None if rule.codes is None else list(rule.codes),
        "plugin_result": str(rule.plugin_result),
        "result_code": rule.result_code,
        "code_when_missing": rule.code_when_missing,
        "retry": str(rule.retry),
    }


def as_text(data: dict[str, Any]) -> str:
    """The file's exact text: two-space indents, keys in the order above, a final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
