"""The architecture page (docs/developers/architecture.md) matches the tree: its Layout
describes each room of the core (each package under a heading of its own, and each module of
the core but the runtimes'), and every path the page names exists."""

from __future__ import annotations

import re

from tests.support.docs import ROOT, section

CORE = ROOT / "src" / "scheduling"
PAGE = "developers/architecture.md"


def rooms() -> str:
    return section(PAGE, "Layout")


def named_paths() -> set[str]:
    quoted = re.findall(r"`([^`\s]+)`", (ROOT / "docs" / PAGE).read_text("utf-8"))
    # A route (`/healthz`) is no path of the tree.
    paths = {q for q in quoted if "/" in q or q.endswith((".py", ".md", ".sql"))}
    return {p for p in paths if not p.startswith("/")}


def exists(name: str) -> bool:
    if (ROOT / name).exists() or (CORE / name).exists():
        return True
    # A bare module name: somewhere in the core or the fake core.
    return "/" not in name and any(
        path.name == name for base in (CORE, ROOT / "fake_core") for path in base.rglob(name)
    )


def packages() -> list[str]:
    """`domain/`, `http/html/`, `runtimes/cpython/`…: every package of the core but the root."""
    return sorted(
        init.parent.relative_to(CORE).as_posix() + "/"
        for init in CORE.rglob("__init__.py")
        if init.parent != CORE and init.parent != CORE / "runtimes"
    )


def test_every_path_the_page_names_exists() -> None:
    missing = sorted(name for name in named_paths() if not exists(name))
    assert missing == []


def test_each_package_is_a_room_with_its_heading() -> None:
    headings = "\n".join(re.findall(r"^###? .*$", rooms(), re.MULTILINE))
    # A package may be named inside a longer path (`src/scheduling/runtimes/cpython/`).
    unnamed = [p for p in packages() if f"`{p}`" not in headings and f"/{p}`" not in rooms()]
    assert unnamed == []


def test_each_module_of_a_package_and_of_the_floors_below_is_described() -> None:
    """Every top-level module, and every module of the packages below the runtimes, by its
    name in the rooms' words (the runtimes' modules change more often than their rooms)."""
    text = rooms()
    top = [p.name for p in CORE.glob("*.py") if p.name != "__init__.py"]
    inner = [
        p.relative_to(CORE).as_posix()
        for p in CORE.rglob("*.py")
        if p.name != "__init__.py" and p.parent != CORE and "runtimes" not in p.parts
    ]
    unnamed = [m for m in top if f"`{m}`" not in text]
    unnamed += [
        m for m in inner if f"`{m.rsplit('/', 1)[-1]}`" not in text and f"`{m}`" not in text
    ]
    assert unnamed == []


def test_the_checks_see_a_missing_room_and_a_missing_path() -> None:
    assert not exists("domain/no_such_module.py")
    assert exists("domain/times.py")
    assert "domain/" in packages()
