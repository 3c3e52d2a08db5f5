"""Core's plugin-contract test, as the fake core runs it: the plugin's
contract/plugin-contract.json, read as a file (never through the plugin's code), against
the fake core's own tables. A Runner table row changed on one side only fails here."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fake_core.contract import RUNNER_TABLE, SECRET_SHAPES, check, status_of
from fake_core.wire import SHAPES

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contract" / "plugin-contract.json"


def plugin_contract() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONTRACT.read_text("utf-8"))
    return data


def test_the_plugin_s_contract_matches_core_s_tables() -> None:
    problems = check(plugin_contract())
    assert problems == [], "the plugin's contract differs from core's:\n" + "\n".join(problems)


def row(data: dict[str, Any], answer: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [r for r in data["runner"]["table"] if r["answer"] == answer]
    return found[0]


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        (lambda d: row(d, "404").update(plugin_result="retrying"), "runner row 404: plugin_result"),
        (lambda d: row(d, "409")["codes"].remove("dependent_content"), "runner row 409: codes"),
        (lambda d: row(d, "5xx").update(retry="none"), "runner row 5xx: retry"),
        (lambda d: d["runner"]["table"].pop(), "runner row past_a_cap: missing"),
        (lambda d: d["secret_shapes"]["launch_code"].update(length=46), "secret_shapes"),
        (lambda d: d["capabilities"].append("users:delete"), "capabilities: core grants no"),
        (lambda d: d.update(protocol="v2"), "protocol"),
        (lambda d: d.update(manifest_id="Scheduling!"), "manifest_id"),
    ],
)
def test_a_change_on_one_side_only_is_reported(change: Any, reported: str) -> None:
    changed = copy.deepcopy(plugin_contract())
    change(changed)
    problems = check(changed)
    assert any(line.startswith(reported) for line in problems), problems


def test_every_answer_the_fake_core_gives_a_command_is_in_its_table() -> None:
    source = "\n".join(
        (ROOT / "fake_core" / name).read_text("utf-8") for name in ("transitions.py", "core.py")
    )
    given = set(re.findall(r'error\((\d{3}), "([a-z_]+)"\)', source))
    given |= {
        ("200", code) for code in re.findall(r'json_reply\(200, \{"code": "([a-z_]+)"\}', source)
    }
    # not_found and method_not_allowed answer a wrong path or method, never a command.
    commands = {
        (status, code) for status, code in given if code not in ("not_found", "method_not_allowed")
    }
    assert len(commands) >= 9
    assert {(status, code) for status, code in commands if status_of(code) != int(status)} == set()


def test_core_s_secret_shapes_are_the_ones_it_checks() -> None:
    for kind, shape in SECRET_SHAPES.items():
        body = "A" * (shape["length"] - len(shape["prefix"]))
        assert SHAPES[kind].fullmatch(shape["prefix"] + body)
        assert not SHAPES[kind].fullmatch(shape["prefix"] + body[1:])


def test_core_s_table_answers_each_status_once() -> None:
    statuses = [status for r in RUNNER_TABLE for status in r["status"]]
    assert len(statuses) == len(set(statuses))
