"""Compressed answers from a Dee Wan core, and what either runtime must make of each.

What Workers' fetch does is what Node's fetch does in the Pyodide harness (measured there);
the CPython runtime must do the same.
"""

from __future__ import annotations

import gzip
import zlib

from tests.support.loopback_core import APPLIED, Reply


def deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def empty_blocks(size: int) -> bytes:
    """A gzip header, then empty stored deflate blocks (5 bytes each) to about `size`."""
    return gzip.compress(b"")[:10] + b"\x00\x00\x00\xff\xff" * (size // 5)


def encoded(body: bytes, encoding: str) -> Reply:
    return Reply(200, body, (("content-type", "application/json"), ("content-encoding", encoding)))


# (name, the answer, the schedule's status and result code after one tick)
CASES = [
    ("gzip", encoded(gzip.compress(APPLIED), "gzip"), ("completed", "transition_applied")),
    ("x-gzip", encoded(gzip.compress(APPLIED), "x-gzip"), ("completed", "transition_applied")),
    ("GZip", encoded(gzip.compress(APPLIED), "GZip"), ("completed", "transition_applied")),
    # RFC 9110's deflate is zlib-wrapped; some servers send it raw.
    ("deflate", encoded(zlib.compress(APPLIED), "deflate"), ("completed", "transition_applied")),
    ("raw deflate", encoded(deflate_raw(APPLIED), "deflate"), ("completed", "transition_applied")),
    # Not gzip after its header: the exchange fails, its outcome unknown: retried.
    (
        "garbage",
        encoded(gzip.compress(APPLIED)[:10] + b"\xff" * 20, "gzip"),
        ("retrying", "network_error"),
    ),
    # Cut short: what was decoded is the answer, here half a JSON object.
    (
        "cut short",
        encoded(gzip.compress(APPLIED)[:-12], "gzip"),
        ("refused", "untrusted_response"),
    ),
    # 100 KB of empty blocks before the answer: the limit (64 KiB) counts decoded bytes.
    (
        "empty blocks first",
        encoded(empty_blocks(100_000) + gzip.compress(APPLIED)[10:], "gzip"),
        ("completed", "transition_applied"),
    ),
    # Only its checksum missing: all of the answer is there.
    (
        "no trailer",
        encoded(gzip.compress(APPLIED)[:-8], "gzip"),
        ("completed", "transition_applied"),
    ),
]
