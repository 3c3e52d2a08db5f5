from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling import safe_json
from scheduling.safe_json import UnsafeJson

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"code": "' + "[" * 1000 + '\\"{"}'
    assert safe_json.loads(text.encode(), max_bytes=1 << 20) == {"code": "[" * 1000 + '"{'}


def test_size_utf8_and_syntax() -> None:
    with pytest.raises(UnsafeJson, match="larger"):
        safe_json.loads(b"1" * 11, max_bytes=10)
    with pytest.raises(UnsafeJson, match="UTF-8"):
        safe_json.loads(b'"\xff"', max_bytes=10)
    with pytest.raises(UnsafeJson, match="not JSON"):
        safe_json.loads(b"{", max_bytes=10)


@settings(max_examples=200, derandomize=True)
@given(JSON_VALUES)
def test_accepts_what_json_accepts_within_limits(value: object) -> None:
    import json

    data = json.dumps(value).encode()
    assert safe_json.loads(data, max_bytes=1 << 20) == value


@settings(max_examples=300, derandomize=True)
@given(st.binary(max_size=200))
def test_any_bytes_parse_or_raise_unsafe_json(data: bytes) -> None:
    # The property: nothing but UnsafeJson escapes (no RecursionError, no UnicodeDecodeError).
    with contextlib.suppress(UnsafeJson):
        safe_json.loads(data, max_bytes=100)
