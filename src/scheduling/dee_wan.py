"""The Dee Wan client: every call the plugin makes to core (protocol §4–§6).

Building each request, the one timeout, reading the answer within a size
limit, and checking it: §4–§5 answers are validated against the spec's shapes
(anything else is `CoreError("untrusted_response")`, never data shown to a
person); a §6 answer is classified into an `Outcome` by the README's Runner
table. Nothing a core answers can make these functions raise anything else.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Annotated, Literal, Protocol, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

from scheduling.domain.localtime import rfc3339
from scheduling.domain.outcomes import UNTRUSTED, Outcome, OutcomeKind
from scheduling.domain.secret_shapes import DelegationTokenField, Id
from scheduling.http import safe_json
from scheduling.ports import (
    HttpClient,
    OutboundRequest,
    OutboundResponse,
    TransportError,
    TransportTimeout,
)

log = logging.getLogger("scheduling")

REQUEST_TIMEOUT_MS = 10_000
ANSWER_LIMIT_BYTES = 1 << 20  # launch exchange and content read
TRANSITION_ANSWER_LIMIT_BYTES = 64 << 10  # an answer to a transition is a few hundred bytes
# D1 binds through JavaScript: Pyodide hands |n| >= 2**53 - 1 over as a BigInt, which D1
# refuses (measured in the harness), so a stored integer stays below that.
MAX_STORED_INTEGER = 2**53 - 2


class CoreError(Exception):
    """Core refused (its code), could not be reached, or answered something we cannot trust."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# -- §4–§5 answer shapes ------------------------------------------------------------------


def _existing_instant(value: str) -> str:
    datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")  # raises for a day that does not exist
    return value


Instant = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"),
    AfterValidator(_existing_instant),
]


def instant_ms(value: str) -> int:
    """Epoch ms of an `Instant` (already validated)."""
    moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class Person(_Wire):
    id: Id
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ContentContext(_Wire):
    kind: Literal["content"]
    content_id: Id


class ManageContext(_Wire):
    kind: Literal["manage"]


class DelegationGrant(_Wire):
    token: DelegationTokenField
    expires_at: Instant


class LaunchExchange(_Wire):
    code: Literal["launch_exchanged"]
    installation_id: Id
    person: Person
    context: ContentContext | ManageContext
    delegation: DelegationGrant


class Content(_Wire):
    id: Id
    primary_id: Id
    title: Annotated[str, StringConstraints(max_length=500)]
    model: Annotated[str, StringConstraints(max_length=200)]
    locale: Annotated[str, StringConstraints(max_length=50)]
    current_version_id: Id
    published_version_id: Id | None


class Transition(_Wire):
    kind: Literal["publish", "unpublish"]
    to: Id


class Workflow(_Wire):
    revision: Annotated[int, Field(ge=0, le=MAX_STORED_INTEGER)]
    transitions: Annotated[list[Transition], Field(max_length=20)]


class Site(_Wire):
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=100)]


class ContentRead(_Wire):
    code: Literal["content"]
    content: Content
    workflow: Workflow
    site: Site


EXCHANGE_ERRORS = {"invalid_request": 400, "plugin_unauthorized": 401, "launch_not_found": 404}
CONTENT_ERRORS = {
    "plugin_unauthorized": 401,
    "requester_unauthorized": 403,
    "capability_refused": 403,
    "content_not_found": 404,
}

Answer = TypeVar("Answer", bound=_Wire)


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
    http: HttpClient, request: OutboundRequest, errors: dict[str, int], answer: type[Answer]
) -> Answer:
    """Send; a listed error becomes its CoreError, anything off-spec `untrusted_response`."""
    try:
        response = await http.send(request)
    except TransportError:
        raise CoreError("dee_wan_unreachable") from None
    if response.truncated:
        raise CoreError(UNTRUSTED)
    try:
        data = safe_json.loads(response.body, max_bytes=ANSWER_LIMIT_BYTES)
    except safe_json.UnsafeJson:
        raise CoreError(UNTRUSTED) from None
    code = data.get("code") if isinstance(data, dict) else None
    if response.status != 200:
        if isinstance(code, str) and errors.get(code) == response.status:
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
    return await _call(http, request, EXCHANGE_ERRORS, LaunchExchange)


async def read_content(
    http: HttpClient, base_url: str, token: str, delegation: str, content_id: str
) -> ContentRead:
    """§5: the content, its workflow as the delegated person sees it, and the site's zone."""
    request = _request(
        "GET",
        f"{base_url}/api/plugins/v1/content/{content_id}",
        {"authorization": f"Bearer {token}", "dee-wan-delegation": delegation},
    )
    return await _call(http, request, CONTENT_ERRORS, ContentRead)


# -- §6 the transition command and its outcome ---------------------------------------------


class ScheduledTransition(Protocol):
    """What a transition command is built from: a stored schedule and its installation."""

    @property
    def base_url(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...
    @property
    def content_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def to_state(self) -> str: ...
    @property
    def version_id(self) -> str: ...
    @property
    def workflow_revision(self) -> int: ...
    @property
    def requested_by(self) -> str: ...
    @property
    def due_at(self) -> int: ...


def transition_request(schedule: ScheduledTransition, token: str) -> OutboundRequest:
    """§6. The body depends only on the stored schedule, so every retry is identical."""
    body = {
        "content_id": schedule.content_id,
        "kind": schedule.kind,
        "to": schedule.to_state,
        "version_id": schedule.version_id,
        "workflow_revision": schedule.workflow_revision,
        "requested_by": schedule.requested_by,
        "due_at": rfc3339(schedule.due_at),
    }
    return _request(
        "POST",
        f"{schedule.base_url}/api/plugins/v1/transitions",
        {"authorization": f"Bearer {token}", "idempotency-key": schedule.idempotency_key},
        body,
        max_body_bytes=TRANSITION_ANSWER_LIMIT_BYTES,
    )


async def send_transition(
    http: HttpClient, schedule: ScheduledTransition, token: str, clock: Callable[[], int]
) -> Outcome:
    """Send one command and classify the answer. Never raises: one claim, one outcome."""
    answer: OutboundResponse | TransportError
    try:
        answer = await http.send(transition_request(schedule, token))
    except TransportError as exc:
        answer = exc
    except Exception as exc:
        # An adapter broke its contract: to this schedule, the request got no answer.
        log.error("transition send failed unexpectedly: %s", type(exc).__name__)
        answer = TransportError(type(exc).__name__)
    try:
        return classify(answer, now_ms=clock())
    except Exception as exc:
        log.error("transition answer could not be classified: %s", type(exc).__name__)
        status = answer.status if isinstance(answer, OutboundResponse) else None
        return Outcome(OutcomeKind.REFUSED, UNTRUSTED, status)


# Each code core may send, with the one status it belongs to.
SUCCESS_CODES = {"transition_applied": 200, "idempotent_replay": 200}
REFUSAL_CODES = {
    "invalid_request": 400,
    "plugin_unauthorized": 401,
    "capability_refused": 403,
    "requester_unauthorized": 403,
    "content_not_found": 404,
    "scheduled_target_stale": 409,
    "workflow_conflict": 409,
    "dependent_content": 409,
    "idempotency_key_reused": 409,
    "transition_unavailable": 422,
    "transition_refused": 422,
}
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
# A code from an answer is stored and shown only if it looks like one.
_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def classify(answer: OutboundResponse | TransportError, *, now_ms: int) -> Outcome:
    """The README's Runner table."""
    if isinstance(answer, TransportTimeout):
        return Outcome(OutcomeKind.RETRY, "timeout")
    if isinstance(answer, TransportError):
        return Outcome(OutcomeKind.RETRY, "network_error")

    status = answer.status
    if answer.truncated:
        return Outcome(OutcomeKind.REFUSED, UNTRUSTED, status)
    code = _code_of(answer.body)
    if status == 429:
        retry_after = parse_retry_after(answer.headers.get("retry-after"), now_ms=now_ms)
        return Outcome(OutcomeKind.RETRY, code or "rate_limited", status, retry_after)
    if status in TRANSIENT_STATUSES:
        return Outcome(OutcomeKind.RETRY, code or "server_error", status)
    if code is not None and SUCCESS_CODES.get(code) == status:
        return Outcome(OutcomeKind.COMPLETED, code, status)
    if code is not None and REFUSAL_CODES.get(code) == status:
        return Outcome(OutcomeKind.REFUSED, code, status)
    # 3xx, other statuses, bad JSON, no code, or a code that is not its status's.
    return Outcome(OutcomeKind.REFUSED, UNTRUSTED, status)


def _code_of(body: bytes) -> str | None:
    try:
        data = safe_json.loads(body, max_bytes=TRANSITION_ANSWER_LIMIT_BYTES)
    except safe_json.UnsafeJson:
        return None
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) and _CODE.fullmatch(code) else None


_DELTA_SECONDS = re.compile(r"[0-9]{1,10}")
_HTTP_DATE_MAX = 64


def parse_retry_after(value: str | None, *, now_ms: int) -> int | None:
    """Milliseconds to wait: delta-seconds (ASCII, at most 10 digits) or an HTTP date.

    None when absent or unusable; the runner then backs off as for a 5xx.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return int(value) * 1000
    if len(value) > _HTTP_DATE_MAX or not value.isascii():
        return None
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0, int(when.timestamp() * 1000) - now_ms)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
