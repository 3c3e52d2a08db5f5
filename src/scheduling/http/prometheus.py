"""Prometheus text exposition format 0.0.4: metric families as the body of /admin/metrics."""

from __future__ import annotations

import math
from collections.abc import Iterable

from scheduling.http.responses import Response
from scheduling.operator.metrics import Family, Sample

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
