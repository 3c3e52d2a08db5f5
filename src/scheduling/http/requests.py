"""The incoming request as the core sees it, whichever runtime received it, and the readers of
what it carries: form and query fields, JSON bodies, and a listing's own query (`show`,
`page`, `zone`).

Every byte comes from a stranger: each reader is bounded and refuses with 400
`invalid_request`, never anything else.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from scheduling import safe_json
from scheduling.domain.outcomes import GROUPS
from scheduling.domain.times import canonical_zone
from scheduling.domain.wording import invalid_request
from scheduling.safe_json import UnsafeJson

# -- form and query fields -------------------------------------------------------------------------

# A `%` that starts an escape, and one that does not (it stays a `%`).
_ESCAPE = re.compile(rb"%(?=[0-9A-Fa-f]{2})")
_NOT_AN_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


class TooManyFields(ValueError):
    pass


def parse_fields(text: str, *, max_fields: int) -> dict[str, str]:
    """Each field's first value, decoded; raises TooManyFields past `max_fields`."""
    fields: dict[str, str] = {}
    for name, value in parse_pairs(text, max_fields=max_fields):
        fields.setdefault(name, value)
    return fields


def parse_pairs(text: str, *, max_fields: int) -> list[tuple[str, str]]:
    """Every field in order, repeats kept (checkboxes of one name), decoded."""
    if text.count("&") + 1 > max_fields:
        raise TooManyFields(f"more than {max_fields} fields")
    pairs: list[tuple[str, str]] = []
    for part in text.split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((unquote_plus(name), unquote_plus(value)))
    return pairs


def unquote_plus(text: str) -> str:
    """`urllib.parse.unquote_plus`, in C passes."""
    text = text.replace("+", " ")
    if "%" not in text:
        return text
    raw = text.encode("utf-8", "surrogatepass").replace(b"\\", b"\\\\")
    # When every `%` starts an escape, a plain replace does it.
    raw = _ESCAPE.sub(b"\\\\x", raw) if _NOT_AN_ESCAPE.search(raw) else raw.replace(b"%", b"\\x")
    return codecs.escape_decode(raw)[0].decode("utf-8", "replace")


# -- JSON bodies -----------------------------------------------------------------------------------

Model = TypeVar("Model", bound=BaseModel)


def json_object(request: Request, *, empty_is: dict[str, Any] | None = None) -> dict[str, Any]:
    """The body as a JSON object; too large, too deep or not JSON is 400 `invalid_request`."""
    if not request.body.strip() and empty_is is not None:
        return dict(empty_is)
    try:
        data = request.json()
    except UnsafeJson as exc:
        raise invalid_request(f"body is {exc}") from None
    if not isinstance(data, dict):
        raise invalid_request("body must be a JSON object")
    return data


def parse_model(model: type[Model], data: dict[str, Any]) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError:
        # Field errors would echo input back; the shape is in the protocol spec.
        raise invalid_request("body does not have the expected shape") from None


# -- the request -----------------------------------------------------------------------------------

# The largest body any route takes. An activation body is under 1 KiB and a
# schedule form under 200 bytes; 64 KiB leaves room and bounds the parsing.
MAX_BODY_BYTES = 64 * 1024
# The schedule form has six fields; more than this is not a form of ours.
MAX_FORM_FIELDS = 50
# Our pages take three query parameters, a launch one: more is not a link of ours.
MAX_QUERY_FIELDS = 50
_DIGITS = re.compile(r"[0-9]{1,18}")


def ascii_int(value: str | None, *, max_digits: int = 18) -> int | None:
    """A whole number written in ASCII digits only, at most `max_digits` of them; else None.

    `str.isdigit()` is no test: it takes `²`, `①`, `٣` and full-width digits, which `int()`
    refuses or reads, and `int()` of thousands of digits raises (and costs quadratic time).
    """
    if value is None or len(value) > max_digits or not _DIGITS.fullmatch(value):
        return None
    return int(value)


@functools.lru_cache(maxsize=64)  # a name a launch: bounded, not one kept for each
def _cookie_pattern(name: str) -> re.Pattern[str]:
    # At the header's start or after a `;`, spaces, then `name=`: the value runs to the next `;`.
    return re.compile(r"(?:^|;)\s*+" + re.escape(name) + r"=([^;]*)")


class Headers(Mapping[str, str]):
    """Case-insensitive, read-only; repeated headers are joined with ', '.

    Repeated `Cookie` lines are joined with '; ' instead (RFC 9113 §8.2.3): a
    browser over HTTP/2 may send one line per cookie, and ', ' would glue the
    session cookie to its neighbour's value.
    """

    def __init__(self, items: Mapping[str, str] | list[tuple[str, str]] | None = None) -> None:
        pairs = items.items() if isinstance(items, Mapping) else (items or [])
        # Each name's values are joined once, at the end: joining as they come copies the
        # growing value again for every repeat (quadratic in a head of repeated lines).
        values: dict[str, list[str]] = {}
        for name, value in pairs:
            values.setdefault(name.lower(), []).append(value)
        self._store = {
            key: ("; " if key == "cookie" else ", ").join(parts) for key, parts in values.items()
        }

    def __getitem__(self, name: str) -> str:
        return self._store[name.lower()]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)


@dataclass
class Request:
    """A request as the core sees it."""

    method: str
    url: str
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    path_params: dict[str, str] = field(default_factory=dict)
    # Who sent it, as the runtime's adapter knows it: the peer's address locally,
    # `CF-Connecting-IP` on Workers (set by Cloudflare's edge). Never read from a header
    # by the core. None when the runtime cannot tell.
    client: str | None = None

    @property
    def path(self) -> str:
        """The path as it was sent, still percent-encoded: `%2F` is not a separator."""
        return urlsplit(self.url).path or "/"

    @functools.cached_property
    def query(self) -> dict[str, str]:
        """First value of each query parameter (parsed once: handlers read it several times)."""
        try:
            return parse_fields(urlsplit(self.url).query, max_fields=MAX_QUERY_FIELDS)
        except TooManyFields:
            raise invalid_request(f"The query has more than {MAX_QUERY_FIELDS} fields.") from None

    def cookie(self, name: str) -> str | None:
        """The first cookie called `name`, or None.

        One regex search over the header, not a dict of every cookie: a header of 16 KiB of
        `;` would otherwise cost a Python step per empty cookie.
        """
        found = _cookie_pattern(name).search(self.headers.get("cookie", ""))
        return found.group(1).rstrip() if found else None

    def form(self) -> dict[str, str]:
        """application/x-www-form-urlencoded fields; first value wins."""
        return {name: values[0] for name, values in self.form_lists().items()}

    def form_lists(self) -> dict[str, list[str]]:
        """Every value of each field, in order (a group of checkboxes shares one name)."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            raise invalid_request("The form is not UTF-8.") from None
        try:
            pairs = parse_pairs(text, max_fields=MAX_FORM_FIELDS)
        except TooManyFields:
            raise invalid_request(f"The form has more than {MAX_FORM_FIELDS} fields.") from None
        fields: dict[str, list[str]] = {}
        for name, value in pairs:
            fields.setdefault(name, []).append(value)
        return fields

    def json(self) -> Any:
        """The body as JSON, bounded in size and depth; raises `safe_json.UnsafeJson` (a ValueError)."""
        return safe_json.loads(self.body, max_bytes=MAX_BODY_BYTES)


# -- a listing's query -----------------------------------------------------------------------------

SHOWS = ("all", *GROUPS)
MAX_PAGE = 100_000


def view_query(query: Mapping[str, str]) -> dict[str, str]:
    """The view's own parameters from a query or a form, each checked; the rest dropped."""
    chosen: dict[str, str] = {}
    if query.get("show") in SHOWS:
        chosen["show"] = query["show"]
    number = ascii_int(query.get("page"), max_digits=len(str(MAX_PAGE)))
    if number is not None and 1 <= number <= MAX_PAGE:
        chosen["page"] = str(number)
    zone = canonical_zone(query.get("zone", ""))
    if zone is not None:
        chosen["zone"] = zone
    return chosen


def ignored(query: Mapping[str, str]) -> dict[str, str]:
    """The view's own parameters that were given but could not be used, as given: the page
    says so rather than change the view silently."""
    chosen = view_query(query)
    return {
        name: query[name]
        for name in ("show", "page", "zone")
        if query.get(name, "").strip() and name not in chosen
    }


def page_number(query: Mapping[str, str]) -> int:
    return int(view_query(query).get("page", "1"))


def back_query(fields: Mapping[str, str]) -> list[tuple[str, str]]:
    """After a cancel, back to the same page, filter and zone."""
    return list(view_query(fields).items())
