"""contract/plugin-contract.json is the code's own tables, written out; the package ships it and
`python -m scheduling contract` prints it; and each Runner table row in it is what the
classifier and the retry policy do."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from scheduling.__main__ import main
from scheduling.dee_wan import as_text, classify, plugin_contract
from scheduling.domain.outcomes import RULES, Caps, after_attempt, outcome_of
from scheduling.domain.protocol import build_manifest
from scheduling.domain.secrets import has_shape
from scheduling.ports import OutboundResponse, TransportError, TransportTimeout

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "contract" / "plugin-contract.json"
SHIPPED = ROOT / "src" / "scheduling" / "plugin-contract.json"
NOW = 1_782_900_000_000
CAPS = Caps(max_attempts=5, max_lateness_ms=900_000, max_retry_after_ms=300_000, lease_ms=60_000)


def written() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FILE.read_text("utf-8"))
    return data


def test_the_file_is_the_code_s_tables() -> None:
    assert written() == plugin_contract()
    assert FILE.read_text("utf-8") == as_text(plugin_contract()), (
        "rewrite it with as_text(contract())"
    )


def test_the_package_ships_the_same_file_and_the_command_prints_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert SHIPPED.read_text("utf-8") == FILE.read_text("utf-8")
    assert main(["contract"]) == 0
    assert capsys.readouterr().out == FILE.read_text("utf-8")


def test_the_manifest_says_what_the_contract_says() -> None:
    manifest = build_manifest("https://scheduling.example")
    data = written()
    assert manifest["id"] == data["manifest_id"] == data["plugin"]["id"]
    assert manifest["version"] == data["plugin"]["version"]
    assert manifest["manifest_version"] == data["manifest_version"]
    assert manifest["protocol"] == data["protocol"]
    assert manifest["capabilities"] == data["capabilities"]


def test_each_secret_shape_is_the_one_the_plugin_checks() -> None:
    for kind, shape in written()["secret_shapes"].items():
        body = "A" * (shape["length"] - len(shape["prefix"]))
        assert has_shape(kind, shape["prefix"] + body)
        assert not has_shape(kind, shape["prefix"] + body + "A")
        assert not has_shape(kind, "x" + shape["prefix"][1:] + body)


def answer(status: int, code: str | None) -> OutboundResponse:
    body = json.dumps({"code": code} if code else {}).encode()
    return OutboundResponse(status, {"content-type": "application/json"}, body)


def examples(row: dict[str, Any]) -> list[OutboundResponse | TransportError]:
    """Answers the row covers: each status with each of its codes, or with any code."""
    if row["answer"] == "network_failure":
        return [TransportError("reset")]
    if row["answer"] == "timeout":
        return [TransportTimeout("10 s")]
    if row["answer"] == "untrusted":
        return [answer(302, "transition_applied"), answer(409, "transition_applied")]
    codes = row["codes"] if row["codes"] is not None else ["some_code", None]
    return [answer(status, code) for status in row["status"] for code in codes]


@pytest.mark.parametrize(
    "row", [r for r in plugin_contract()["runner"]["table"] if r["answer"] != "past_a_cap"], ids=str
)
def test_each_runner_row_is_what_the_runner_does(row: dict[str, Any]) -> None:
    for example in examples(row):
        outcome = classify(example, now_ms=NOW)
        plan = after_attempt(
            outcome, attempt=1, due_at=NOW, now=NOW, caps=CAPS, rng=random.Random(1)
        )
        assert plan.status == row["plugin_result"], (row["answer"], example)
        sent = example.body if isinstance(example, OutboundResponse) else b"{}"
        code = json.loads(sent).get("code")
        expected = row["result_code"] or code or row["code_when_missing"]
        assert outcome.code == expected, (row["answer"], example)
        assert (plan.next_attempt_at is None) == (row["retry"] == "none")
        status = example.status if isinstance(example, OutboundResponse) else None
        assert outcome.http_status == status, (row["answer"], example)


def test_only_a_rule_that_waits_for_retry_after_keeps_it() -> None:
    assert outcome_of(RULES["429"], None, 429, 5_000).retry_after_ms == 5_000
    for answer_name in ("5xx", "200", "409"):
        rule = RULES[answer_name]
        code = (rule.codes or ("busy",))[0]
        assert outcome_of(rule, code, rule.statuses[0], 5_000).retry_after_ms is None


def test_past_a_cap_nothing_more_is_sent() -> None:
    [row] = [r for r in written()["runner"]["table"] if r["answer"] == "past_a_cap"]
    busy = classify(answer(503, "busy"), now_ms=NOW)
    plan = after_attempt(busy, attempt=5, due_at=NOW, now=NOW, caps=CAPS, rng=random.Random(1))
    assert (plan.status, plan.result_code, row["retry"]) == (
        row["plugin_result"],
        row["result_code"],
        "none",
    )
