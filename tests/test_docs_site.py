"""The documentation site: it builds with `mkdocs build --strict` (no broken link or anchor, no
page outside the nav) without the network, every heading of the old README has a home in it,
and the README stays short."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from scripts.layer_diagram import TABLE, layers_table, render, unit_label
from tests.support.doc_pictures import (
    REFERENCE,
    in_the_docs_tree,
    made_by_the_tests,
    named_by_the_docs,
)
from tests.support.docs import DOCS, ROOT, headings, page
from tests.support.old_readme import OLD_README_HEADINGS

README = ROOT / "README.md"
README_MOST_LINES = 200
# What a built page may load from elsewhere: nothing. A link *to* another site is fine.
EXTERNAL_ASSET = re.compile(
    r"""<(?:script|img|iframe)\b[^>]*\bsrc=["']?(?:https?:)?//"""
    r"""|<link\b[^>]*\bhref=["']?(?:https?:)?//"""
    r"""|@import\s+(?:url\()?["']?(?:https?:)?//"""
    r"""|url\(["']?(?:https?:)?//""",
    re.IGNORECASE,
)


def nav_pages() -> list[str]:
    """Every page the nav of mkdocs.yml lists, in order."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))

    def walk(entry: Any) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [p for item in entry for p in walk(item)]
        assert isinstance(entry, dict)
        return [p for value in entry.values() for p in walk(value)]

    return walk(config["nav"])


def test_the_site_builds_strictly_without_the_network(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # A proxy that refuses every connection: any fetch at build time fails the build.
    offline = {
        name: "http://127.0.0.1:9"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
    }
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, **offline, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    loaded = {
        str(path.relative_to(site)): sorted(set(EXTERNAL_ASSET.findall(text)))
        for path in site.rglob("*")
        if path.suffix in {".html", ".css", ".js"}
        and EXTERNAL_ASSET.search(text := path.read_text("utf-8", errors="replace"))
    }
    assert loaded == {}
    assert (site / "editors" / "index.html").is_file()
    _axe_finds_nothing_on_the_home(site)


def _axe_finds_nothing_on_the_home(site: Path) -> None:
    """Issue 38: Material's defaults failed axe's color-contrast and link-in-text-block on the
    docs home; docs/stylesheets/extra.css answers both. Checked where Chromium is installed."""
    from tests.support.browser import CHROMIUM, axe_violations, missing_pieces

    if missing_pieces() is not None:
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            for width in (1280, 390):
                shown = browser.new_page(viewport={"width": width, "height": 900})
                shown.goto((site / "index.html").as_uri())
                assert axe_violations(shown) == [], width
        finally:
            browser.close()


def test_the_asset_check_sees_a_font_or_script_from_elsewhere() -> None:
    for fetched in (
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        '<script src="//unpkg.com/mermaid.js"></script>',
        "@import url('https://fonts.example/x.css');",
    ):
        assert EXTERNAL_ASSET.search(fetched), fetched
    assert not EXTERNAL_ASSET.search('<a href="https://developers.cloudflare.com/">limits</a>')


def test_every_page_in_docs_is_in_the_nav_and_every_nav_page_exists() -> None:
    listed = nav_pages()
    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)


def test_every_heading_of_the_old_readme_has_a_home_in_the_site() -> None:
    in_site = {heading for path in nav_pages() for heading in headings(page(path))}
    homeless = [h for h in OLD_README_HEADINGS if h not in in_site]
    assert homeless == []


def test_the_readme_fits_on_a_screen_or_two() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= README_MOST_LINES
    needed = ("bash scripts/dev", "bash scripts/test", "mkdocs serve", "com.example.scheduling")
    assert [n for n in needed if n not in text] == []


def test_the_layer_diagram_is_drawn_from_the_layers_table() -> None:
    layers = layers_table(TABLE.read_text("utf-8"))
    drawn = (DOCS / "images" / "layers.svg").read_text("utf-8")
    assert drawn == render(layers), "run: .venv/bin/python -m scripts.layer_diagram"
    for _, units in layers:
        for unit in units:
            assert unit_label(unit) in drawn, unit


def test_the_layer_diagram_reads_the_whole_table_and_changes_with_it() -> None:
    layers = layers_table(TABLE.read_text("utf-8"))
    units = {unit for _, names in layers for unit in names}
    assert {"ports", "domain", "repository", "runner", "http.html", "runtimes.workers"} <= units
    moved = [(name, names) for name, names in layers if "domain" not in names]
    assert "domain/" not in render(moved)
    assert render(moved) != render(layers)


def test_every_picture_a_page_shows_is_one_the_walk_takes_and_is_in_the_docs_tree() -> None:
    made, kept = made_by_the_tests(), in_the_docs_tree()
    shown = named_by_the_docs()
    assert shown, "the guides show the walk's pictures"
    not_taken = {page: sorted(names - made) for page, names in shown.items() if names - made}
    assert not_taken == {}, "a page shows a picture no picture(...) call of the walk takes"
    missing = {page: sorted(names - kept) for page, names in shown.items() if names - kept}
    assert missing == {}, "take them: DOCS_PICTURES=1 .venv/bin/pytest tests/test_browser_walk.py"
    assert kept <= made, f"pictures in the docs tree the walk no longer takes: {kept - made}"


def test_the_picture_check_sees_a_picture_the_walk_does_not_take() -> None:
    assert REFERENCE.findall("![The form](../images/walk/editor-form.png)") == ["editor-form"]
    assert REFERENCE.findall("![x](docs/images/walk/gone-page.png)") == ["gone-page"]
    assert "gone-page" not in made_by_the_tests()
    assert "editor-form" in made_by_the_tests()
