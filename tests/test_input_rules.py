"""The input rules the app keeps for both runtimes, as a client meets them over HTTP: a body of
64 KiB is read and one byte more is refused, JSON nested deeper than 32 levels is refused, and
so is a JSON string that never closes (the body that froze the old pre-scan), each with a 400
`invalid_request` that says why."""

from __future__ import annotations

import httpx

from tests.support.runtimes import Runtime

LIMIT = 64 * 1024
MINT = "/admin/activation-codes"
JSON = {"content-type": "application/json"}


async def post(runtime: Runtime, path: str, body: bytes) -> httpx.Response:
    async with runtime.http() as http:
        return await http.post(path, content=body, headers={**runtime.operator, **JSON})


def refused_because(answer: httpx.Response) -> str:
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_request"), answer.text
    return str(answer.json()["message"])


async def test_a_body_of_64_kib_is_read_and_one_byte_more_is_refused(runtime: Runtime) -> None:
    padded = b"{" + b" " * (LIMIT - 2) + b"}"
    assert (await post(runtime, MINT, padded)).status_code == 201
    over = await post(runtime, MINT, padded[:-1] + b" }")
    assert "larger than 65536 bytes" in refused_because(over)


async def test_json_nested_deeper_than_32_levels_is_refused(runtime: Runtime) -> None:
    deep = b'{"a":' * 32 + b"1" + b"}" * 32  # read, and refused for its shape alone
    assert "body must be {}" in refused_because(await post(runtime, MINT, deep))
    deeper = b'{"a":' + deep + b"}"
    assert "nested deeper than 32 levels" in refused_because(await post(runtime, MINT, deeper))


async def test_a_string_that_never_closes_is_refused(runtime: Runtime) -> None:
    unclosed = b'"' + b'\\"' * 32_000
    refused_because(await post(runtime, "/dee-wan/activate", unclosed))
