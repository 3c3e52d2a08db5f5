"""A webhook receiver beside the fake Dee Wan, for the plugin's notifications in development.

`POST /webhooks` takes a Standard Webhooks delivery and checks it as a receiver
must: the `webhook-id`, `webhook-timestamp` (within five minutes of the core's
clock) and `webhook-signature` headers, the signature an HMAC-SHA256 of
`id.timestamp.body` under a secret pasted on the home page (`whsec_…`, shown
once by the plugin when the endpoint was added). A delivery it cannot verify
is answered 401 and the plugin tries again later, so pasting the secret
afterwards still lets it through; a verified one is answered 204. Either way
it is listed on the home page (the last `KEPT`), with what the check found.
It never echoes success: nothing is accepted unverified.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json

from fake_core.context import Context
from fake_core.routing import Request
from fake_core.state import ReceivedWebhook
from fake_core.wire import Reply, header, json_reply

KEPT = 50
TOLERANCE_S = 5 * 60
SECRET_PREFIX = "whsec_"
MAX_SECRETS = 5


def secret_key(secret: str) -> bytes:
    """The key of a `whsec_` secret; ValueError when it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a signing secret starts with whsec_")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("a signing secret is whsec_ followed by base64") from None
    if not key:
        raise ValueError("a signing secret has a key after whsec_")
    return key


def check(
    secrets: list[str], webhook_id: str, timestamp: str, signatures: str, body: bytes, now_ms: int
) -> str | None:
    """None when one of `secrets` signed this id, timestamp and body; else why not."""
    if not (webhook_id and timestamp and signatures):
        return "missing webhook-id, webhook-timestamp or webhook-signature"
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return "webhook-timestamp is not Unix seconds"
    if abs(now_ms // 1000 - int(timestamp)) > TOLERANCE_S:
        return "webhook-timestamp is more than five minutes off"
    if not secrets:
        return "no signing secret pasted yet"
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    for secret in secrets:
        expected = base64.b64encode(hmac.digest(secret_key(secret), signed, hashlib.sha256))
        for sent in signatures.split(" "):
            version, _, value = sent.partition(",")
            if version == "v1" and hmac.compare_digest(value.encode(), expected):
                return None
    return "signature does not match a pasted secret"


async def receive(ctx: Context, request: Request) -> Reply:
    state = ctx.core.state
    now = ctx.core.clock()
    webhook_id = header(request.headers, "webhook-id") or ""
    problem = check(
        state.webhook_secrets,
        webhook_id,
        header(request.headers, "webhook-timestamp") or "",
        header(request.headers, "webhook-signature") or "",
        request.body,
        now,
    )
    event_type, summary = _described(request.body)
    state.webhooks.append(
        ReceivedWebhook(now, webhook_id[:80], event_type, summary, problem is None, problem or "")
    )
    del state.webhooks[:-KEPT]
    if problem is not None:
        return json_reply(401, {"code": "not_verified", "message": problem})
    return Reply(204, {}, b"")


def _described(body: bytes) -> tuple[str, str]:
    try:
        event = json.loads(body)
        data = event["data"]
        kind = str(event["type"])[:40]
    except (ValueError, TypeError, KeyError):
        return "(not an event)", ""
    if not isinstance(data, dict):
        return kind, ""
    parts = [data.get("schedule_id"), data.get("result_code"), data.get("message")]
    return kind, " · ".join(str(p)[:200] for p in parts if p)


def keep_secret(ctx: Context, secret: str) -> None:
    """Remember a pasted secret (the newest MAX_SECRETS); ValueError when it is not one."""
    secret = secret.strip()
    secret_key(secret)
    secrets = ctx.core.state.webhook_secrets
    if secret not in secrets:
        secrets.insert(0, secret)
        del secrets[MAX_SECRETS:]
