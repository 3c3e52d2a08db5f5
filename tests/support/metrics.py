"""Reading /admin/metrics as Prometheus would: with the official `prometheus_client` parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from scheduling.app import App
from tests.support.app import OPERATOR, call

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# (sample name, sorted labels) -> value
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> tuple[dict[str, str], Samples]:
    """Each family's type by name, and every sample's value."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in samples, f"{key} appears twice"
            samples[key] = sample.value
    return types, samples


async def scrape(app: App) -> tuple[dict[str, str], Samples]:
    response = await call(app, "GET", "/admin/metrics", headers=OPERATOR)
    assert response.status == 200, response.body[:300]
    assert response.header("content-type") == CONTENT_TYPE
    return parse(response.body.decode("utf-8"))


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def counters(types: dict[str, str], samples: Samples) -> Samples:
    """The samples that must never decrease: counters and every histogram series."""
    monotonic = {name for name, kind in types.items() if kind in ("counter", "histogram")}
    return {
        key: v for key, v in samples.items() if any(key[0].startswith(name) for name in monotonic)
    }
