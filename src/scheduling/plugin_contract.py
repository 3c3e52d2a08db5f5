"""The plugin's half of the plugin contract, as data core can read.

Core's plugin-contract test checks a plugin's copy of the protocol and manifest
versions, the manifest's id and capabilities, the secret shapes and the Runner
table against core's own. `contract()` builds that copy from the code's own
tables; `contract/plugin-contract.json` is it written out (tests keep the two
equal), the package ships it as `scheduling/plugin-contract.json`, and
`python -m scheduling contract` prints it. docs/protocol.md says what core does
with it.
"""

from __future__ import annotations

import json
from typing import Any

from scheduling.domain.manifest import (
    CAPABILITIES,
    MANIFEST_VERSION,
    PLUGIN_ID,
    PLUGIN_NAME,
    PLUGIN_VERSION,
    PROTOCOL,
)
from scheduling.domain.outcomes import RUNNER_TABLE, AnswerRule
from scheduling.domain.retry_policy import BACKOFF_BASE_MS, BACKOFF_CAP_MS, JITTER
from scheduling.domain.secret_shapes import PROTOCOL_SECRETS, SHAPES
from scheduling.limits import REQUEST_TIMEOUT_MS

CONTRACT_VERSION = 1


def contract() -> dict[str, Any]:
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
