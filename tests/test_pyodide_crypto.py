"""Sealed values cross runtimes: CPython's `cryptography` and WebCrypto inside Pyodide.

A token sealed by one runtime must open in the other (an operator may move the
plugin between the local server and the Worker with the same TOKEN_KEY), and
the fixed vectors below must open in both, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from scheduling.domain.secrets import IV_BYTES, TAG_BYTES, unframe
from scheduling.ports import UnreadableSecret
from scheduling.runtimes.cpython.adapters import CpythonCrypto
from tests.pyodide_harness.harness import TOKEN_KEY, Harness

pytestmark = pytest.mark.pyodide

# Fixed vectors: AES-256-GCM, 96-bit IV, context as associated data, `v1.` framing.
VECTOR_KEY = "Z1a7f2+8G24Xq8VZUQ7oxZ/4psagXlpt/cAUlbIuoCk="
VECTORS = [
    (
        "installation-token:ins_vector",
        "dwp_-NPAST-gNXxidnvh7oHviRTjRxWNTwUvalJz6mYSZO0",
        "v1.QwZW5EZ8aMpD-DwerEelWYpeyxrnmZ-aD8FlINFRnLoW20aqPuFbyOkenJZCIkANpKZj3_TfTOGaOYzx8mhhL1iyejmgn3uZOKxn",
    ),
    (
        "delegation:ins_vector:" + "a" * 64,
        "Zoë – ünïcode ✓",
        "v1.EghNqZMEJN69JEVj5kDoEA5HCB6_e9fjF7JivQdC5c7njNm3IBzri5AA_bhZZTs5XYU",
    ),
]
OTHER_KEY = base64.b64encode(bytes(range(100, 132))).decode()


def cpython(key: str = TOKEN_KEY) -> CpythonCrypto:
    return CpythonCrypto(base64.b64decode(key))


@pytest.mark.parametrize(("context", "plaintext", "sealed"), VECTORS)
async def test_fixed_vector_opens_in_cpython(context: str, plaintext: str, sealed: str) -> None:
    assert await cpython(VECTOR_KEY).open(sealed, context) == plaintext


@pytest.mark.parametrize(("context", "plaintext", "sealed"), VECTORS)
def test_fixed_vector_opens_under_webcrypto(
    harness: Harness, context: str, plaintext: str, sealed: str
) -> None:
    assert harness.open(sealed, context, key=VECTOR_KEY) == {"plaintext": plaintext}


@pytest.mark.parametrize(("context", "plaintext", "sealed"), VECTORS)
async def test_fixed_vector_refuses_wrong_context_or_key_in_both(
    harness: Harness, context: str, plaintext: str, sealed: str
) -> None:
    wrong_context = context + "x"
    with pytest.raises(UnreadableSecret):
        await cpython(VECTOR_KEY).open(sealed, wrong_context)
    with pytest.raises(UnreadableSecret):
        await cpython(OTHER_KEY).open(sealed, context)
    unreadable = {"error": "UnreadableSecret"}
    assert harness.open(sealed, wrong_context, key=VECTOR_KEY) == unreadable
    assert harness.open(sealed, context, key=OTHER_KEY) == unreadable


async def test_sealed_in_cpython_opens_under_webcrypto(harness: Harness) -> None:
    token = "dwp_" + "A" * 43
    sealed = await cpython().seal(token, "installation-token:ins_a")
    assert harness.open(sealed, "installation-token:ins_a") == {"plaintext": token}
    assert harness.open(sealed, "installation-token:ins_b") == {"error": "UnreadableSecret"}


async def test_sealed_under_webcrypto_opens_in_cpython(harness: Harness) -> None:
    token = "dwp_" + "B" * 43
    sealed = harness.seal(token, "installation-token:ins_a")
    iv, data = unframe(sealed)
    assert len(iv) == IV_BYTES
    assert len(data) == len(token) + TAG_BYTES
    assert await cpython().open(sealed, "installation-token:ins_a") == token
    with pytest.raises(UnreadableSecret):
        await cpython().open(sealed, "installation-token:ins_b")
    with pytest.raises(UnreadableSecret):
        await cpython(OTHER_KEY).open(sealed, "installation-token:ins_a")


def test_webcrypto_uses_a_fresh_iv_each_time(harness: Harness) -> None:
    first = harness.seal("same", "ctx")
    second = harness.seal("same", "ctx")
    assert first != second
    assert unframe(first)[0] != unframe(second)[0]


def test_damaged_values_are_unreadable_under_webcrypto(harness: Harness) -> None:
    sealed = harness.seal("secret", "ctx")
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for damaged in (flipped, sealed[:20], "v2." + sealed[3:], "", "v1.!!!"):
        assert harness.open(damaged, "ctx") == {"error": "UnreadableSecret"}, damaged


def test_sha256_matches_hashlib(harness: Harness) -> None:
    for value in ("", "dwa_" + "x" * 43, "ünïcode"):
        assert harness.sha256_hex(value) == hashlib.sha256(value.encode()).hexdigest()


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"\x0b" * 20, b"Hi There"),  # RFC 4231 test case 1
        (b"Jefe", b"what do ya want for nothing?"),  # test case 2
        (bytes(range(32)), b"msg_1.1782900000.{}"),
        (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First"),  # case 6
    ],
)
def test_webcrypto_hmac_is_the_standard_librarys(
    harness: Harness, key: bytes, message: bytes
) -> None:
    """What webhook signatures are made of (`Crypto.hmac_sha256`)."""
    assert harness.hmac_sha256(key, message) == hmac.digest(key, message, hashlib.sha256)
