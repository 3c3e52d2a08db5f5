"""h11's header-line pattern, made linear, for the local server and the HTTP client.

h11 (0.16) checks each header line against `name ":" OWS value OWS`, where the
whitespace before the value, the runs inside it and the whitespace after it are all
greedy `[ \\t]*`/`[ \\t]+`. On a line of spaces that ends in a character none of them
takes (a form feed, a vertical tab, a lone CR, NUL) the regex tries every way of sharing
the spaces out before it fails: a 16 KiB request head held the local server 1.6 s, and
an answer header of 100 KiB (httpx's h11 takes that much) would hold a tick a minute.
The same pattern with possessive quantifiers matches the same lines, with the same
groups, and never gives a space back.

`install()` swaps it into h11 once; it refuses to if h11's own pattern is not the one
this was written against (an h11 upgrade must be looked at, not patched blindly).
"""

from __future__ import annotations

import re

from h11 import _readers

H11_PATTERN = (
    rb"(?P<field_name>[-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*"
    rb"(?P<field_value>([^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*"
)
LINEAR = re.compile(
    rb"(?P<field_name>[-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*+"
    rb"(?P<field_value>([^\x00\s]++(?:[ \t]++[^\x00\s]++)*+)?)[ \t]*+"
)


def install() -> None:
    current = _readers.header_field_re
    if current is LINEAR:
        return
    if current.pattern != H11_PATTERN:
        raise RuntimeError("h11's header pattern changed: review runtimes/cpython/h11_headers.py")
    _readers.header_field_re = LINEAR
