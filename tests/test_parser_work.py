"""Issue 17 §1: every parser of foreign bytes does work linear in its input, counted in steps.

Work is the Python instructions run (`sys.settrace` opcode events) for n bytes and for the same
pattern grown to 4n: linear is about 4x, quadratic 16x. Hypothesis (derandomized, `target()`)
grows periodic inputs from each parser's tokens; the hand-made adversaries run too. Work in C is
one step here (`bench/parser_bench.py` times it; test_input_rules.py and test_slow_input.py send
the old pre-scan's worst body).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any
from urllib.parse import parse_qs

import pytest
from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import strategies as st

from scheduling import safe_json
from scheduling.http.requests import TooManyFields, parse_fields
from tests.support.foreign_bytes import Parser, fill, parsers

SMALL = 256
GROWTH = 4
# Work at 4n may be at most this multiple of the work at n, plus a constant for fixed costs.
ALLOWED = 4.5
FIXED_STEPS = 300
WORK = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=25,
    phases=[Phase.explicit, Phase.generate, Phase.target],
    suppress_health_check=list(HealthCheck),
)
PARSERS = {parser.name: parser for parser in parsers()}


def steps(run: Callable[[bytes], None], data: bytes) -> int:
    """Python instructions executed by `run(data)`."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        run(data)
    finally:
        sys.settrace(previous)
    return count


def growth(parser: Parser, make: Callable[[int], bytes]) -> tuple[int, int]:
    """Steps at SMALL bytes and at GROWTH times that, each after one warm-up call (caches,
    first imports)."""
    run = parser.runner(parser.cap)
    small, large = make(SMALL), make(SMALL * GROWTH)
    run(small)
    run(large)
    return steps(run, small), steps(run, large)


@pytest.mark.parametrize(
    ("parser", "adversary"),
    [(parser, name) for parser in PARSERS.values() for name in parser.adversaries],
    ids=lambda value: value.name[:40] if isinstance(value, Parser) else str(value),
)
def test_each_hand_made_adversary_costs_linear_work(parser: Parser, adversary: str) -> None:
    small, large = growth(parser, parser.adversaries[adversary])
    assert large <= ALLOWED * small + FIXED_STEPS, (small, large)


@pytest.mark.parametrize("name", list(PARSERS), ids=lambda name: name[:40])
def test_hypothesis_finds_no_input_that_costs_more_than_linear_work(name: str) -> None:
    parser = PARSERS[name]
    tokens = st.lists(st.sampled_from(list(parser.tokens)), max_size=6).map(b"".join)

    @WORK
    @given(st.tuples(tokens, tokens.filter(bool), tokens))
    def grows_linearly(pattern: tuple[bytes, bytes, bytes]) -> None:
        prefix, unit, suffix = pattern
        small, large = growth(parser, lambda n: fill(unit, n, prefix, suffix))
        target(large / max(small, 1), label="growth of the work")
        assert large <= ALLOWED * small + FIXED_STEPS, (small, large)

    grows_linearly()


def test_the_step_count_sees_quadratic_work() -> None:
    """The property can fail: a parser that rescans from every separator is caught."""

    def rescans(data: bytes) -> None:
        for at in range(len(data)):
            if data[at : at + 1] == b"&":
                for _ in data[at:]:
                    pass

    quadratic = Parser("rescans", 1 << 20, rescans, lambda n: b"", {}, [b"&"])
    small, large = growth(quadratic, lambda n: fill(b"&", n))
    assert large > ALLOWED * small + FIXED_STEPS


# -- the two parsers rewritten, against what they replace --------------------------------

FIELD_TOKENS = [
    "%", "%4", "%41", "%e9", "%C3%A9", "%C3", "%A9", "\\", "+", "a", "é", "東", "%%", "%zz",
    "\\x41", "%5C", "%5Cx41", "%00", "&", "=", "%26", "%3D", ";", "\\\\", "%5c%78%34%31",
]  # fmt: skip


@settings(derandomize=True, database=None, max_examples=2000)
@given(st.lists(st.sampled_from(FIELD_TOKENS), max_size=16).map("".join))
def test_urlencoded_reads_fields_as_parse_qs_does(text: str) -> None:
    try:
        expected: Any = {
            name: values[0]
            for name, values in parse_qs(text, keep_blank_values=True, max_num_fields=8).items()
        }
    except ValueError:
        expected = "too many"
    try:
        got: Any = parse_fields(text, max_fields=8)
    except TooManyFields:
        got = "too many"
    assert got == expected


def deepest(data: bytes) -> int:
    """The reference, a byte-by-byte state machine: the deepest the brackets outside strings
    nest before any bracket closes more than was opened (where JSON has already failed)."""
    depth = most = 0
    in_string = escaped = False
    for char in data.decode("latin-1"):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            most = max(most, depth)
        elif char in "]}":
            depth -= 1
            if depth < 0:
                break
    return most


JSON_PIECES = [b'"', b"\\", b'\\"', b"[", b"]", b"{", b"}", b"a", b":", b",", b"1", b'""']


@settings(derandomize=True, database=None, max_examples=3000)
@given(st.lists(st.sampled_from(JSON_PIECES), max_size=40).map(b"".join), st.integers(1, 6))
def test_safe_json_refuses_exactly_what_nests_too_deep(data: bytes, max_depth: int) -> None:
    outcome: Any
    try:
        outcome = safe_json.loads(data, max_bytes=1 << 20, max_depth=max_depth)
    except safe_json.UnsafeJson as refused:
        outcome = refused
    too_deep = isinstance(outcome, safe_json.UnsafeJson) and "nested deeper" in str(outcome)
    assert too_deep == (deepest(data) > max_depth)
    if not isinstance(outcome, safe_json.UnsafeJson):
        assert outcome == json.loads(data)


@pytest.mark.parametrize("depth", [0, 1, 31, 32, 33, 40, 20_000])
@pytest.mark.parametrize("opens", [b"[", b'{"k":'])
def test_safe_json_takes_nesting_up_to_the_limit(depth: int, opens: bytes) -> None:
    close = b"]" if opens == b"[" else b"}"
    data = opens * depth + b"1" + close * depth
    if depth <= safe_json.MAX_DEPTH:
        assert safe_json.loads(data, max_bytes=1 << 20) == json.loads(data)
    else:
        with pytest.raises(safe_json.UnsafeJson, match="nested deeper than 32 levels"):
            safe_json.loads(data, max_bytes=1 << 20)
