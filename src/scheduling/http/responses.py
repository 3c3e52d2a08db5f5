"""The responses the core returns, each runtime turning them into its own type; and the
Prometheus text exposition format, the body of /admin/metrics.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduling.operator.metrics import Family, Sample

# -- responses -------------------------------------------------------------------------------------

# Applied to every response; pages add their CSP on top.
BASE_HEADERS = (
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
)

# Sent when PUBLIC_ORIGIN is https: a browser that reached the plugin once over HTTPS goes
# on using it for a year, so a network on the way cannot hand it a plain-HTTP page (no
# includeSubDomains: the names under the plugin's host are not the plugin's to rule).
STRICT_TRANSPORT = ("strict-transport-security", "max-age=31536000")

PAGE_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


@dataclass
class Response:
    """An answer as the core makes it."""

    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    # The answer to a HEAD keeps the length its GET's body would have (`without_body`).
    head_of_length: int | None = None

    def without_body(self) -> Response:
        """The answer to a HEAD: no body, and the length the body had (Content-Length)."""
        self.head_of_length, self.body = len(self.body), b""
        return self

    @property
    def content_length(self) -> int:
        return len(self.body) if self.head_of_length is None else self.head_of_length

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def with_base_headers(self, *, https: bool = False) -> Response:
        """The headers every answer carries; with `https` (PUBLIC_ORIGIN is https),
        Strict-Transport-Security too."""
        present = {name.lower() for name, _ in self.headers}
        base = (*BASE_HEADERS, STRICT_TRANSPORT) if https else BASE_HEADERS
        self.headers.extend(pair for pair in base if pair[0] not in present)
        return self


def json_response(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, separators=(",", ":")).encode()
    return Response(status, body, [("content-type", "application/json")])


def error_response(status: int, code: str, message: str | None = None) -> Response:
    payload: dict[str, Any] = {"code": code}
    if message:
        payload["message"] = message
    return json_response(payload, status)


def html_response(html: str, status: int = 200) -> Response:
    return Response(
        status,
        html.encode("utf-8"),
        [
            ("content-type", "text/html; charset=utf-8"),
            ("content-security-policy", PAGE_CSP),
            ("x-frame-options", "DENY"),
        ],
    )


def redirect(location: str, status: int = 303) -> Response:
    return Response(status, b"", [("location", location)])


# -- Prometheus exposition -------------------------------------------------------------------------

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exposition(families: Iterable[Family]) -> Response:
    body = "".join(_family(family) for family in families)
    return Response(200, body.encode("utf-8"), [("content-type", CONTENT_TYPE)])


def _family(family: Family) -> str:
    # A counter's TYPE line names its samples, `…_total`, as the 0.0.4 format does.
    typed = family.name + ("_total" if family.kind == "counter" else "")
    lines = [
        f"# HELP {typed} {_escape_help(family.help)}",
        f"# TYPE {typed} {family.kind}",
        *(_sample(family.name, sample) for sample in family.samples),
    ]
    return "\n".join(lines) + "\n"


def _sample(name: str, sample: Sample) -> str:
    labels = ",".join(f'{key}="{_escape_label(value)}"' for key, value in sample.labels)
    return f"{name}{sample.suffix}{'{' + labels + '}' if labels else ''} {_number(sample.value)}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
