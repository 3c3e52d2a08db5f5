"""The documentation site's pages as text, for the tests that run its tables and examples.

A page is a Markdown file under `docs/`; a section is a heading (of any level) and what
follows it up to the next heading of the same or a higher level.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HEADING = re.compile(r"^(#+) (.+)$", re.MULTILINE)


def page(path: str) -> str:
    """The text of `docs/<path>`."""
    return (DOCS / path).read_text("utf-8")


def section(path: str, heading: str) -> str:
    """The section of a page under the heading that reads exactly `heading`."""
    text = page(path)
    starts = [m for m in HEADING.finditer(without_code(text)) if m.group(2).strip() == heading]
    assert len(starts) == 1, f"docs/{path} has {len(starts)} headings {heading!r}"
    start = starts[0]
    level = len(start.group(1))
    for later in HEADING.finditer(without_code(text), start.end()):
        if len(later.group(1)) <= level:
            return text[start.start() : later.start()]
    return text[start.start() :]


def headings(text: str) -> list[str]:
    """Every heading's text, outside fenced code."""
    return [m.group(2).strip() for m in HEADING.finditer(without_code(text))]


def without_code(text: str) -> str:
    """`text` with fenced code blocks blanked (same length), so a `# comment` is no heading."""
    return re.sub(r"(?ms)^```.*?^```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def table_lines(text: str, first_column: str) -> list[str]:
    """The lines of the one Markdown table in `text` whose header starts with `first_column`
    (its cells joined by ` | `: `"Case | Written"`), header included."""
    blocks: list[str] = re.findall(r"(?m)(?:^\|.*\n?)+", text)
    tables = [block.splitlines() for block in blocks]
    found = [t for t in tables if header(t[0]).startswith(first_column)]
    assert len(found) == 1, f"{len(found)} tables start with {first_column!r}"
    [rows] = found
    assert len(rows) > 2, f"the table {first_column!r} has no rows"
    return rows


def header(row: str) -> str:
    return " | ".join(cell.strip() for cell in row.strip().strip("|").split("|"))


def table_cells(text: str, first_column: str) -> list[list[str]]:
    """That table's rows as stripped cells, header and rule dropped."""
    return [
        [cell.strip() for cell in row.strip().strip("|").split("|")]
        for row in table_lines(text, first_column)[2:]
    ]


def fenced(text: str, language: str) -> list[str]:
    """The bodies of the fenced code blocks of `language` in `text`."""
    return re.findall(rf"(?ms)^```{language}\n(.*?)^```", text)
