"""Every parser of foreign bytes in the plugin, with benign and hostile inputs of any size.

For `bench/parser_bench.py` (times them) and tests/test_parser_work.py (counts their steps).
A refusal (an exception) is work done like any answer. `benign(n)`: what a person, a browser
or an honest core sends, n bytes; each adversary: n hand-made bytes meant to be slow;
`tokens`: the pieces hypothesis builds its own from.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

from scheduling import safe_json
from scheduling.app import ROUTES
from scheduling.config import Configuration
from scheduling.dee_wan import ANSWER_LIMIT_BYTES, TRANSITION_ANSWER_LIMIT_BYTES, classify
from scheduling.domain.addresses import base_url_problem
from scheduling.domain.outcomes import parse_retry_after
from scheduling.domain.protocol import ContentRead, LaunchExchange
from scheduling.domain.secrets import basic_password, bearer_token, has_shape
from scheduling.domain.times import canonical_zone, occurrences, resolve_local_time
from scheduling.http.requests import MAX_BODY_BYTES, Headers, Request, view_query
from scheduling.http.routing import SESSION_COOKIE, Router
from scheduling.ports import OutboundResponse
from scheduling.runtimes.cpython.adapters import BodyDecoder
from tests.support.app import base_env

KIB = 1024
# A request head as large as the local server's h11 takes (its default limit).
MAX_HEAD_BYTES = 16 * KIB
NOW_MS = 1_782_900_000_000
CONFIG = Configuration.from_mapping(base_env())
ROUTER = Router(ROUTES)


def fill(unit: bytes, size: int, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    """`prefix`, `unit` repeated, `suffix`: exactly `size` bytes."""
    middle = size - len(prefix) - len(suffix)
    body = (unit * (middle // max(len(unit), 1) + 1))[: max(middle, 0)]
    return (prefix + body + suffix)[:size]


def quietly(run: Callable[[bytes], object]) -> Callable[[bytes], None]:
    """A parser refuses by raising; that is as much work done as an answer."""

    def call(data: bytes) -> None:
        with contextlib.suppress(Exception):
            run(data)

    return call


@dataclass
class Parser:
    name: str
    cap: int
    run: Callable[[bytes], None]
    benign: Callable[[int], bytes]
    adversaries: dict[str, Callable[[int], bytes]]
    tokens: Sequence[bytes]
    # Where the work depends on a limit set per size rather than on the input's length.
    run_for: Callable[[int], Callable[[bytes], None]] | None = None

    def runner(self, size: int) -> Callable[[bytes], None]:
        return self.run_for(size) if self.run_for else self.run

    def sizes(self, candidates: Sequence[int]) -> list[int]:
        """Those of `candidates` up to its limit, and the limit (nothing larger reaches it)."""
        return sorted({*(size for size in candidates if size <= self.cap), self.cap})


# -- benign inputs: what a person, a browser or an honest core sends, grown to a size ----


def json_document(size: int, code: str = "content") -> bytes:
    """An honest core's content read: its fields, then `extra` items until `size`."""
    answer: dict[str, Any] = {
        "code": code,
        "content": {
            "id": "cnt_en",
            "primary_id": "cnt_en",
            "title": "Summer news",
            "model": "article",
            "locale": "en",
            "current_version_id": "ver_2",
            "published_version_id": "ver_1",
        },
        "workflow": {"revision": 3, "transitions": [{"kind": "publish", "to": "published"}]},
        "site": {"timezone": "Europe/Paris"},
        "extra": [],
    }
    item = {"id": "cnt_00001", "title": 'Édition d\'été, "2026"', "n": 12, "tags": ["a", "b"]}
    base = len(json.dumps(answer).encode())
    each = len(json.dumps(item).encode()) + 2
    count = max(0, (size - base) // each)
    while True:
        answer["extra"] = [item] * count
        raw = json.dumps(answer).encode()
        if len(raw) <= size or count == 0:
            return raw[:-1] + b" " * (size - len(raw)) + b"}"
        count -= 1


# Text a person types, as a browser sends it in a form or a query: non-ASCII percent-encoded.
TYPED_TEXT = "Grüße aus Köln, 東京 und Zürich — 10:00 ".encode()
TYPED = quote_plus(TYPED_TEXT).encode()


def typed(prefix: bytes, size: int) -> bytes:
    """`prefix`, then typed text to `size` bytes (whole escapes only, as a browser sends)."""
    room = size - len(prefix)
    whole = TYPED * (room // len(TYPED))
    return prefix + whole + b"a" * (room - len(whole))


def form_body(size: int) -> bytes:
    """The schedule form, then a typed note (as a form with a free-text field sends it)."""
    fields = {
        "csrf_token": "A" * 43,
        "opened_for": "cnt_en",
        "version_id": "ver_2",
        "published_version_id": "ver_1",
        "transition": "publish:published",
        "timezone": "Europe/Paris",
        "local_time": "2026-07-02T09:00",
    }
    raw = "&".join(f"{quote_plus(k)}={quote_plus(v)}" for k, v in fields.items())
    return typed(raw.encode() + b"&note=", size)


def query_string(size: int) -> bytes:
    """The manage view's parameters, then a tracking parameter carrying typed text."""
    return typed(b"show=upcoming&page=2&zone=America%2FNew_York&utm_content=", size)


def cookie_header(size: int) -> bytes:
    """A jar of ordinary cookies (a name, a 24-character value), ours the last one."""
    ours = b"; __Host-scheduling_session=" + b"A" * 43
    return fill(b"pref_cookie=0123456789abcdef01234567; ", size, b"", ours)


def date_value(size: int) -> bytes:
    return fill(b" ", size, b"Wed, 01 Jul 2026 10:05:00 GMT")


def url_value(size: int) -> bytes:
    return fill(b"section/", size, b"https://cms.example.com/")


# -- the parsers ----------------------------------------------------------------------------


def parse_json(cap: int) -> Callable[[bytes], None]:
    return quietly(lambda data: safe_json.loads(data, max_bytes=cap))


def validate_answer(data: bytes) -> None:
    parsed = safe_json.loads(data, max_bytes=ANSWER_LIMIT_BYTES)
    for model in (ContentRead, LaunchExchange):
        try:
            model.model_validate(parsed)
        except Exception:  # noqa: S112 - an answer that does not validate is still work
            continue


def classify_answer(data: bytes) -> None:
    classify(OutboundResponse(200, {}, data), now_ms=NOW_MS)


def read_form(data: bytes) -> None:
    Request("POST", "https://scheduling.example/x", Headers(), data).form()


def read_query(data: bytes) -> None:
    text = data.decode("latin-1")
    request = Request("GET", "https://scheduling.example/installations/ins_1?" + text)
    view_query(request.query)


def read_cookies(data: bytes) -> None:
    Request("GET", "https://x.example/", Headers({"cookie": data.decode("latin-1")})).cookie(
        SESSION_COOKIE
    )


def read_path(data: bytes) -> None:
    path = "/installations/" + data.decode("latin-1")
    ROUTER.match(Request("GET", "https://scheduling.example" + path))


def read_retry_after(data: bytes) -> None:
    parse_retry_after(data.decode("latin-1"), now_ms=NOW_MS)


def read_base_url(data: bytes) -> None:
    base_url_problem(data.decode("latin-1"), CONFIG)


def read_local_time(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    now = datetime.fromtimestamp(NOW_MS / 1000, UTC)
    resolve_local_time(text, text, text, now=now)
    occurrences(text, "Europe/Paris")
    canonical_zone(text)


def read_secret(data: bytes) -> None:
    token = bearer_token("Bearer " + data.decode("latin-1"))
    basic_password("Basic " + data.decode("latin-1"))
    has_shape("session_id", token)
    has_shape("launch_code", data.decode("latin-1"))


def tiny_blocks(size: int) -> bytes:
    """A gzip stream of many one-byte blocks (each flushed): the most headers per byte."""
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
    head = packer.compress(b"")
    block = packer.compress(b" ") + packer.flush(zlib.Z_FULL_FLUSH)  # the same bytes each time
    return head + block * (size // len(block))


def decode_body(limit: int) -> Callable[[bytes], None]:
    """The CPython HTTP client's decoding of a gzip answer, read up to `limit` decoded bytes."""

    def run(data: bytes) -> None:
        decoder = BodyDecoder("gzip")
        body = bytearray()
        for at in range(0, len(data), 16 * KIB):  # as httpx hands over the socket's reads
            body += decoder.decode(data[at : at + 16 * KIB], limit + 1 - len(body))
            if len(body) > limit:
                return

    return quietly(run)


JSON_TOKENS = [
    b'"', b"\\", b'\\"', b"[", b"]", b"{", b"}", b":", b",", b"0", b"a", b" ",
    b'""', b"\\u00e9", b'"a":', b"[1,", b'{"a":', b"\xc3\xa9", b"\\\\",
]  # fmt: skip
FORM_TOKENS = [b"&", b"=", b"%", b"%2", b"%25", b"%e9", b"+", b";", b"a", b"\xe9", b"%C3%A9"]


def parsers() -> list[Parser]:
    unclosed = {
        'unclosed string of \\"': lambda n: fill(b'\\"', n, b'"'),
        "quotes": lambda n: fill(b'"', n),
        "depth 32, repeated": lambda n: fill(b"[" * 32 + b"]" * 32, n),
        "[] pairs": lambda n: fill(b"[]", n),
        "empty strings": lambda n: fill(b'"",', n),
        "31 unclosed, then strings": lambda n: fill(b'"",', n, b"[" * 31),
        "33 deep at the end": lambda n: fill(b" ", n, b"[", b"[" * 33 + b"]" * 34),
        "numbers": lambda n: fill(b"0,", n, b"[", b"0]"),
        "escapes": lambda n: fill(b"\\u00e9", n, b'"', b'"'),
    }
    return [
        Parser(
            "JSON: request bodies, Dee Wan's answers (`safe_json.loads`)",
            ANSWER_LIMIT_BYTES,
            parse_json(ANSWER_LIMIT_BYTES),
            json_document,
            unclosed,
            JSON_TOKENS,
        ),
        Parser(
            "a launch exchange or content read, validated (`dee_wan`)",
            ANSWER_LIMIT_BYTES,
            quietly(validate_answer),
            json_document,
            {
                **unclosed,
                "many transitions": lambda n: fill(
                    b'{"kind":"publish","to":"x"},',
                    n,
                    b'{"code":"content","workflow":{"revision":1,"transitions":[',
                    b"{}]}}",
                ),
                "a long id": lambda n: fill(
                    b"a", n, b'{"code":"content","content":{"id":"', b'"}}'
                ),
            },
            JSON_TOKENS,
        ),
        Parser(
            "a transition answer, classified (`dee_wan.classify`)",
            TRANSITION_ANSWER_LIMIT_BYTES,
            quietly(classify_answer),
            lambda n: json_document(n, "transition_applied"),
            unclosed,
            JSON_TOKENS,
        ),
        Parser(
            "`Retry-After` (`outcomes.parse_retry_after`)",
            64 * KIB,
            quietly(read_retry_after),
            date_value,
            {
                "digits": lambda n: fill(b"9", n),
                "spaces then digits": lambda n: fill(b" ", n, b"", b"120"),
                "commas": lambda n: fill(b",", n),
            },
            [b"0", b" ", b",", b"GMT", b"Wed", b"\xe9", b"-", b":"],
        ),
        Parser(
            "a form body (`Request.form`, `parse_pairs`)",
            MAX_BODY_BYTES,
            quietly(read_form),
            form_body,
            {
                "separators": lambda n: fill(b"&", n),
                "percent": lambda n: fill(b"%", n, b"a="),
                "escapes": lambda n: fill(b"%C3%A9", n, b"a="),
                "half escapes": lambda n: fill(b"%e", n, b"a="),
                "pluses": lambda n: fill(b"+", n, b"a="),
                "50 fields": lambda n: fill(b"a=b&", n)[: n - 0],
            },
            FORM_TOKENS,
        ),
        Parser(
            "a query string (`Request.query`, `parse_fields`, the manage view's `view_query`)",
            MAX_HEAD_BYTES,
            quietly(read_query),
            query_string,
            {
                "separators": lambda n: fill(b"&", n),
                "fields": lambda n: fill(b"a=&", n),
                "percent": lambda n: fill(b"%", n, b"page="),
                "digits": lambda n: fill(b"9", n, b"page="),
                "superscripts": lambda n: fill("²".encode(), n, b"page="),
            },
            FORM_TOKENS,
        ),
        Parser(
            "the `Cookie` header (`Request.cookie`)",
            MAX_HEAD_BYTES,
            quietly(read_cookies),
            cookie_header,
            {
                "semicolons": lambda n: fill(b";", n),
                "empty cookies": lambda n: fill(b"a=;", n),
                "equals": lambda n: fill(b"=", n),
            },
            [b";", b"=", b" ", b"a", b"a=b; ", b"__Host-"],
        ),
        Parser(
            "a path, routed (`Router.match`)",
            MAX_HEAD_BYTES,
            quietly(read_path),
            lambda n: fill(b"a", n, b"ins_", b"/schedules/sch_1/cancel"),
            {
                "slashes": lambda n: fill(b"/", n),
                "segments": lambda n: fill(b"a/", n),
                "almost a cancel": lambda n: fill(b"/schedules/x", n, b"ins_1"),
                "percent": lambda n: fill(b"%2F", n),
            },
            [b"/", b"a", b"%2F", b"schedules", b"/cancel", b"ins_1"],
        ),
        Parser(
            "a Dee Wan base URL (`base_url_problem`)",
            64 * KIB,
            quietly(read_base_url),
            url_value,
            {
                "labels": lambda n: fill(b"a.", n, b"https://", b"example"),
                "hyphens": lambda n: fill(b"-", n, b"https://a", b"a.example"),
                "percent": lambda n: fill(b"%", n, b"https://cms.example/"),
                "punycode labels": lambda n: fill(b"xn--bcher-kva.", n, b"https://", b"example"),
                "digits": lambda n: fill(b"1", n, b"https://"),
            },
            [b".", b"a", b"-", b"xn--", b"%", b"1", b":", b"/", b"https://", b"0x"],
        ),
        Parser(
            "`local_time`, a zone, a fold (`resolve_local_time`, `occurrences`)",
            MAX_BODY_BYTES,
            quietly(read_local_time),
            lambda n: fill(TYPED_TEXT, n, b"2026-07-02T09:00 "),
            {
                "digits": lambda n: fill(b"9", n),
                "a date repeated": lambda n: fill(b"2026-07-02T09:00", n),
                "Arabic digits": lambda n: fill("٣".encode(), n),
                "zone-like": lambda n: fill(b"Europe/", n),
            },
            [b"2026", b"-", b"T", b":", b"0", b"9", "٣".encode(), b"/", b"Europe", b" "],
        ),
        Parser(
            "an `Authorization` header and secret shapes (`bearer_token`, `has_shape`)",
            MAX_HEAD_BYTES,
            quietly(read_secret),
            lambda n: fill(b"A", n),
            {
                "spaces": lambda n: fill(b" ", n),
                "dwl_ repeated": lambda n: fill(b"dwl_", n),
                "almost a token": lambda n: fill(b"A" * 42 + b"!", n),
            },
            [b"A", b" ", b"dwl_", b"-", b"_", b"!"],
        ),
        Parser(
            "a gzip answer (`HttpxClient`; the size is the limit it decodes to)",
            ANSWER_LIMIT_BYTES,
            decode_body(ANSWER_LIMIT_BYTES),
            lambda n: gzip.compress(json_document(n)),
            {
                "a bomb": lambda n: gzip.compress(b" " * (40 * n), compresslevel=9),
                "zeros": lambda n: gzip.compress(bytes(40 * n)),
                "many tiny blocks": tiny_blocks,
                "empty blocks": lambda n: fill(b"\x00\x00\x00\xff\xff", n, gzip.compress(b"")[:10]),
                "garbage": lambda n: fill(b"\xff", n, gzip.compress(b"")[:10]),
            },
            [b"\x1f\x8b\x08\x00", b"\x00", b"\xff", b"a", b"\x00\x00\x00\xff\xff"],
            run_for=decode_body,
        ),
    ]
