"""The code in the docs runs: the signature checks of docs/admins/notifications.md, in Python
and in JavaScript, accept what the plugin signs and refuse a changed body, a wrong secret and
an old timestamp."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduling.channels.webhook import new_secret, signed_headers
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from tests.support.docs import fenced, section

SIGNATURES = section("admins/notifications.md", "Verifying a signature")
Verify = Callable[[str, dict[str, str], bytes], bool]
Case = tuple[str, str, dict[str, str], bytes, bool]  # name, secret, headers, body, valid


def python_verify() -> Verify:
    [_, source] = fenced(SIGNATURES, "python")  # the first uses the official library
    scope: dict[str, object] = {}
    exec(compile(source, "docs/admins/notifications.md", "exec"), scope)  # noqa: S102
    verify = scope["verify"]
    assert callable(verify)
    return verify


@pytest.fixture
async def cases() -> list[Case]:
    crypto = CpythonCrypto(bytes(32))  # the sealing key plays no part in a signature
    secret, other = new_secret(crypto.random_token()), new_secret(crypto.random_token())
    body = json.dumps({"type": "schedule.refused", "data": {"status": "refused"}}).encode()
    now = int(time.time() * 1000)
    signed = await signed_headers(crypto, secret, "msg_1", now, body)
    old = await signed_headers(crypto, secret, "msg_1", now - 600_000, body)
    # During a rotation a receiver may get two signatures, the valid one second.
    wrong = await signed_headers(crypto, other, "msg_1", now, body)
    signatures = f"{wrong['webhook-signature']} {signed['webhook-signature']}"
    both = {**signed, "webhook-signature": signatures}
    return [
        ("as signed", secret, signed, body, True),
        ("two signatures", secret, both, body, True),
        ("body changed", secret, signed, body.replace(b"refused", b"complete"), False),
        ("another secret", other, signed, body, False),
        ("ten minutes old", secret, old, body, False),
        ("id changed", secret, {**signed, "webhook-id": "msg_2"}, body, False),
    ]


def test_the_python_example_checks_what_the_plugin_signs(cases: list[Case]) -> None:
    verify = python_verify()
    results = {name: verify(secret, headers, body) for name, secret, headers, body, _ in cases}
    assert results == {name: valid for name, _, _, _, valid in cases}


def test_the_javascript_example_checks_what_the_plugin_signs(
    cases: list[Case], tmp_path: Path
) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    [source] = fenced(SIGNATURES, "js")
    (tmp_path / "verify.mjs").write_text(source, "utf-8")
    (tmp_path / "run.mjs").write_text(
        'import { verify } from "./verify.mjs";\n'
        'import { readFileSync } from "node:fs";\n'
        'const cases = JSON.parse(readFileSync(0, "utf-8"));\n'
        "const results = Object.fromEntries(cases.map(([name, secret, headers, body]) =>\n"
        '  [name, verify(secret, headers, Buffer.from(body, "latin1"))]));\n'
        "console.log(JSON.stringify(results));\n",
        "utf-8",
    )
    sent = [
        [name, secret, headers, body.decode("latin-1")] for name, secret, headers, body, _ in cases
    ]
    ran = subprocess.run(
        [node, str(tmp_path / "run.mjs")],
        input=json.dumps(sent),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(ran.stdout) == {name: valid for name, _, _, _, valid in cases}
