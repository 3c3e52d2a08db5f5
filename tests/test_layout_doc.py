"""The Layout section of docs/developers/architecture.md matches the tree: what it names
exists, and it names every package and top-level module of the core, and every module of
`domain/` and `runner/`."""

from __future__ import annotations

import re

from tests.support.docs import ROOT, section

CORE = ROOT / "src" / "scheduling"


def layout() -> str:
    return section("developers/architecture.md", "Layout")


def named_paths() -> set[str]:
    quoted = re.findall(r"`([^`\s]+)`", layout())
    return {q for q in quoted if "/" in q or q.endswith((".py", ".md", ".sql"))}


def exists(name: str) -> bool:
    if (ROOT / name).exists() or (CORE / name).exists():
        return True
    # A bare module name: somewhere in the core or the fake core.
    return "/" not in name and any(
        path.name == name for base in (CORE, ROOT / "fake_core") for path in base.rglob(name)
    )


def test_every_path_the_layout_names_exists() -> None:
    missing = sorted(name for name in named_paths() if not exists(name))
    assert missing == []


def test_the_layout_names_every_package_and_top_level_module_of_the_core() -> None:
    text = layout()
    packages = sorted(
        init.parent.relative_to(CORE).as_posix() + "/"
        for init in CORE.rglob("__init__.py")
        if init.parent != CORE
    )
    modules = sorted(
        path.name
        for folder in (CORE, CORE / "domain", CORE / "runner")
        for path in folder.glob("*.py")
        if path.name != "__init__.py"
    )
    # A package may be named inside a longer path (`src/scheduling/runtimes/cpython/`).
    unnamed = [p for p in packages if f"`{p}" not in text and f"/{p}" not in text]
    unnamed += [m for m in modules if f"`{m}`" not in text]
    assert unnamed == []
