"""The pictures of the guides, taken by the browser walk from the real pages.

A walk step calls `picture(page, "editor-form")` where the page shows what a guide wants to
show. Every run of the walk takes each picture (so a step that no longer reaches its page
fails), into the walk's screenshot folder; with `DOCS_PICTURES=1` it also writes it into
the docs tree (`docs/images/walk/<name>.png`), which is how the committed set is refreshed:

    DOCS_PICTURES=1 .venv/bin/pytest tests/test_browser_walk.py

tests/test_docs_site.py fails when a page of the docs (or the README) names a picture that
no `picture(...)` call of the tests makes, or one missing from the docs tree.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from playwright.sync_api import FloatRect, Page, ViewportSize

from tests.support.docs import DOCS, ROOT

FOLDER = DOCS / "images" / "walk"
WIDTH, HEIGHT = 860, 900
PHONE_HEIGHT = 844
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# How a page of the docs (or the README) names one: a Markdown image whose path ends in
# images/walk/<name>.png.
REFERENCE = re.compile(r"!\[[^\]]*\]\((?:[^)\s]*/)?images/walk/([a-z0-9-]+)\.png\)")


def picture(
    page: Page, name: str, shots: Path, *, width: int = WIDTH, show: str | None = None
) -> Path:
    """Take the picture `name` of what `page` shows now, one screenful at `width` px (the
    pages' column and its margins; 390 for a phone), scrolled to the first element `show`
    selects if given: into `shots`, and into the docs tree when DOCS_PICTURES=1."""
    assert NAME.match(name), f"a picture's name is lower-case words and hyphens: {name!r}"
    before = page.viewport_size
    height = PHONE_HEIGHT if width < 600 else HEIGHT
    page.set_viewport_size(ViewportSize(width=width, height=height))
    try:
        if show is not None:
            page.locator(show).first.evaluate(
                "e => { e.scrollIntoView({block: 'start'}); window.scrollBy(0, -24); }"
            )
        # No blank band under a short page: the picture ends where the page does.
        left = page.evaluate("document.documentElement.scrollHeight - window.scrollY")
        clip = FloatRect(x=0, y=0, width=width, height=min(height, left))
        taken = shots / f"picture-{name}.png"
        data = page.screenshot(path=str(taken), clip=clip, animations="disabled", caret="hide")
    finally:
        if before is not None:
            page.set_viewport_size(before)
    if os.environ.get("DOCS_PICTURES") == "1":
        FOLDER.mkdir(parents=True, exist_ok=True)
        (FOLDER / f"{name}.png").write_bytes(data)
    return taken


def made_by_the_tests() -> set[str]:
    """Every name a `picture(page, "name", …)` call in the tests gives, read from the source."""
    names: set[str] = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "picture"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                names.add(node.args[1].value)
    return names


def named_by_the_docs() -> dict[str, set[str]]:
    """For each page of the docs (and the README) that shows pictures, their names."""
    pages = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]
    found = {
        str(path.relative_to(ROOT)): set(REFERENCE.findall(path.read_text("utf-8")))
        for path in pages
    }
    return {page: names for page, names in found.items() if names}


def in_the_docs_tree() -> set[str]:
    return {path.stem for path in FOLDER.glob("*.png")}
