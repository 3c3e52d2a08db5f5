"""Core's side of the plugin contract, and the check core's plugin-contract test makes.

A plugin ships `plugin-contract.json`: the protocol and manifest versions it
speaks, its manifest id and the capabilities it requests, the secret shapes it
checks, and its Runner table (what it makes of each answer to a transition
command). Core holds that copy to its own tables below; `check` lists every
difference, one line each, so a row changed on one side only fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fake_core.state import ALL_CAPABILITIES
from fake_core.wire import SECRET_PREFIXES, TOKEN_LENGTH

PROTOCOL = "v1"
MANIFEST_VERSION = 1
REQUEST_TIMEOUT_MS = 10_000  # what core allows a plugin's command before it counts as lost
BACKOFF = {"base_ms": 15_000, "cap_ms": 300_000, "jitter": [0.5, 1.0]}
SECRET_SHAPES: dict[str, dict[str, Any]] = {
    kind: {"prefix": prefix, "length": len(prefix) + TOKEN_LENGTH}
    for kind, prefix in SECRET_PREFIXES.items()
}
_MANIFEST_ID = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z][a-z0-9-]*)+")


def _row(
    answer: str,
    status: list[int],
    codes: list[str] | None,
    result: str,
    retry: str = "none",
    *,
    result_code: str | None = None,
    code_when_missing: str | None = None,
) -> dict[str, Any]:
    return {
        "answer": answer,
        "status": status,
        "codes": codes,
        "plugin_result": result,
        "result_code": result_code,
        "code_when_missing": code_when_missing,
        "retry": retry,
    }


# Every answer core's transition endpoint (§6) can give, and what the plugin must make of it.
RUNNER_TABLE: list[dict[str, Any]] = [
    _row("200", [200], ["transition_applied", "idempotent_replay"], "completed"),
    _row("400", [400], ["invalid_request"], "refused"),
    _row("401", [401], ["plugin_unauthorized"], "refused"),
    _row("403", [403], ["capability_refused", "requester_unauthorized"], "refused"),
    _row("404", [404], ["content_not_found"], "refused"),
    _row(
        "409",
        [409],
        [
            "scheduled_target_stale",
            "workflow_conflict",
            "dependent_content",
            "idempotency_key_reused",
        ],
        "refused",
    ),
    _row("422", [422], ["transition_unavailable", "transition_refused"], "refused"),
    _row("untrusted", [], None, "refused", result_code="untrusted_response"),
    _row("429", [429], None, "retrying", "retry_after", code_when_missing="rate_limited"),
    _row(
        "5xx", [500, 502, 503, 504], None, "retrying", "backoff", code_when_missing="server_error"
    ),
    _row("network_failure", [], None, "retrying", "backoff", result_code="network_error"),
    _row("timeout", [], None, "retrying", "backoff", result_code="timeout"),
    _row("past_a_cap", [], None, "refused", result_code="retry_exhausted"),
]


def status_of(code: str) -> int | None:
    """The one status core sends `code` with, from the table."""
    for row in RUNNER_TABLE:
        if row["codes"] and code in row["codes"]:
            return int(row["status"][0])
    return None


def check(contract: Mapping[str, Any]) -> list[str]:
    """Every way the plugin's contract differs from core's tables; [] when they agree."""
    problems = []
    for name, expected in (
        ("protocol", PROTOCOL),
        ("manifest_version", MANIFEST_VERSION),
        ("secret_shapes", SECRET_SHAPES),
    ):
        if contract.get(name) != expected:
            problems.append(f"{name}: plugin says {contract.get(name)!r}, core {expected!r}")
    manifest_id = contract.get("manifest_id")
    if not isinstance(manifest_id, str) or not _MANIFEST_ID.fullmatch(manifest_id):
        problems.append(f"manifest_id: {manifest_id!r} is not a reverse-DNS id")
    capabilities = contract.get("capabilities")
    if not isinstance(capabilities, list) or not capabilities:
        problems.append("capabilities: none listed")
    elif unknown := sorted(set(capabilities) - ALL_CAPABILITIES):
        problems.append(f"capabilities: core grants no {', '.join(unknown)}")
    runner = contract.get("runner")
    problems += _runner_problems(runner if isinstance(runner, Mapping) else {})
    return problems


def _runner_problems(runner: Mapping[str, Any]) -> list[str]:
    problems = []
    if runner.get("request_timeout_ms") != REQUEST_TIMEOUT_MS:
        problems.append(f"runner.request_timeout_ms: {runner.get('request_timeout_ms')!r}")
    if runner.get("backoff") != BACKOFF:
        problems.append(f"runner.backoff: plugin says {runner.get('backoff')!r}, core {BACKOFF!r}")
    table = runner.get("table")
    rows = table if isinstance(table, list) else []
    theirs = {row.get("answer"): row for row in rows if isinstance(row, Mapping)}
    ours = {row["answer"]: row for row in RUNNER_TABLE}
    for answer in sorted(set(ours) | set(theirs), key=str):
        if answer not in theirs:
            problems.append(f"runner row {answer}: missing from the plugin's table")
        elif answer not in ours:
            problems.append(f"runner row {answer}: core has no such answer")
        elif dict(theirs[answer]) != ours[answer]:
            differ = sorted(
                key
                for key in set(ours[answer]) | set(theirs[answer])
                if theirs[answer].get(key) != ours[answer].get(key)
            )
            for key in differ:
                problems.append(
                    f"runner row {answer}: {key} is {theirs[answer].get(key)!r} in the plugin's"
                    f" table, {ours[answer].get(key)!r} in core's"
                )
    return problems
