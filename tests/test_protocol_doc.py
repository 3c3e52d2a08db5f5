"""docs/protocol.md is the project's own account of protocol v1: it agrees with the code,
and the documents point at it, never at a file outside the repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scheduling.dee_wan import CONTENT_READ, LAUNCH_EXCHANGE, TRANSITION, CallCodes
from scheduling.domain.protocol import build_manifest
from scheduling.domain.secrets import PATTERNS

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "protocol.md"
DOCUMENTS = [
    ROOT / "README.md",
    PROTOCOL,
    ROOT / "fake_core" / "README.md",
    ROOT / "tests" / "pyodide_harness" / "README.md",
]


def section(number: int) -> str:
    text = PROTOCOL.read_text("utf-8")
    start = text.index(f"\n## §{number} ")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_manifest_shown_is_the_one_served() -> None:
    [shown] = re.findall(r"```json\n(.*?)```", section(2), re.S)
    assert json.loads(shown) == build_manifest("https://scheduling.example")


@pytest.mark.parametrize(
    "call",
    [LAUNCH_EXCHANGE, CONTENT_READ, TRANSITION],
    ids=["launch exchange", "content read", "transition"],
)
def test_every_code_the_client_knows_is_documented_with_its_status(call: CallCodes) -> None:
    text = section(call.section)
    for code, status in call.statuses.items():
        assert f"`{code}`" in text, code
        assert str(status) in text, (code, status)


def test_every_secret_prefix_is_in_the_shapes_table() -> None:
    text = section(1)
    for pattern in PATTERNS.values():
        prefix = pattern.partition("[")[0]
        assert not prefix or f"`{prefix}` + 43" in text, prefix


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_a_heading(document: Path) -> None:
    text = document.read_text("utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "#")):
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve()
        assert linked.exists(), target
        if anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text("utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, target


def test_nothing_points_at_a_protocol_file_outside_the_repository() -> None:
    skipped = {".git", ".venv", "node_modules", ".cache", "build"}
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*")
        if path.suffix in {".md", ".py", ".sh", ".mjs", ".jsonc", ".toml"}
        and not skipped.intersection(path.relative_to(ROOT).parts)
        and path != Path(__file__).resolve()
        and re.search(r"shared/spec|dee-wan-protocol", path.read_text("utf-8"))
    ]
    assert offenders == []
