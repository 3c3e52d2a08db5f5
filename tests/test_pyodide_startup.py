"""The entry's top level under Pyodide, as workerd runs it before taking the memory snapshot.

Before the snapshot workerd refuses randomness except where its SDK allows it (two draws, in
`pydantic_core`'s import): a module-level `secrets.token_hex()` or `random.choice()` would
break the deploy. Each test imports the entry in a fresh Pyodide (startup.mjs), counting every
draw and which module's top level made it (startup_probe.py). The import's time is a figure
for the benchmark (`bench/startup_bench.py`), never asserted here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.pyodide_harness.harness import ROOT, import_probe, node_path

pytestmark = [
    pytest.mark.pyodide,
    pytest.mark.skipif(node_path() is None, reason="node is not installed"),
]


def test_importing_the_entry_draws_randomness_only_where_the_sdk_allows() -> None:
    report = import_probe("entry", draws=True)
    assert report["violations"] == {}
    # Exactly what the SDK's patch allows: it fails the deploy on a leftover allowance too.
    assert report["allowed"] == {"pydantic_core": 2}
    # The snapshot holds the runner and the HTTP app with its compiled templates, so an
    # isolate's first request imports nothing; the template sources' registry, difflib and
    # the rare routes' modules (activation, the operator page, the calendar feed, MCP) stay
    # out.
    loaded = set(report["loaded"])
    assert {
        "scheduling.runner.tick",
        "scheduling.runner.alarm",
        "scheduling.app",
        "jinja2",
    } <= loaded
    assert "scheduling.http.html.compiled_templates" in loaded
    rare = {
        "scheduling.pages.activation",
        "scheduling.pages.operator",
        "scheduling.pages.calendar_feed",
        "scheduling.mcp",
    }
    assert {"scheduling.pages.template_sources", "difflib", *rare} & loaded == set()


def test_a_module_level_draw_in_the_entry_s_imports_is_found(tmp_path: Path) -> None:
    """The check above can fail: the same import with two draws added at module level."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    with (src / "scheduling" / "config.py").open("a", encoding="utf-8") as config:
        config.write("\nimport secrets\n\n_NONCE = secrets.token_hex(8)\n")
    with (src / "scheduling" / "runner" / "tick.py").open("a", encoding="utf-8") as tick:
        tick.write("\nimport random\n\n_JITTER = random.choice((1, 2))\n")
    report = import_probe("entry", draws=True, src=src)
    assert report["violations"] == {"scheduling.config": 1, "scheduling.runner.tick": 1}
    assert report["allowed"] == {"pydantic_core": 2}
