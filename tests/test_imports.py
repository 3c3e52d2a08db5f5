"""No module imports a test file or conftest.py: what tests share lives in tests/support/.

A test file imported by another is collected twice and runs its module-level code
(fixtures, marks, skips) where it was not meant to; conftest.py is pytest's to load.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "fake_core", "tests", "bench", "scripts")

# Imports of test files in files that another part of issue 14 owns (the fake core's
# tests and the dev command's). Each goes when its file imports from tests/support/;
# an entry that no longer matches fails below, so this list only shrinks.
PENDING: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(path: Path) -> set[str]:
    return imports_in(path.read_text("utf-8"), module_name(path))


def imports_in(source: str, module: str) -> set[str]:
    """Every module an import statement in `source` names, relative imports resolved
    as if `source` were the module `module` (dotted, from the repo root)."""
    package = module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from tests import x`
    return found


def is_test_file(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def python_files() -> list[Path]:
    return [
        path
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not {"node_modules", ".cache", "__pycache__"} & set(path.parts)
    ]


def test_no_module_imports_a_test_file_or_conftest() -> None:
    offending = {
        (path.relative_to(ROOT).as_posix(), module)
        for path in python_files()
        for module in imported_modules(path)
        if is_test_file(module)
    }
    assert offending - PENDING == set()
    assert PENDING - offending == set(), "fixed: remove these from PENDING"


def test_the_check_sees_what_it_must() -> None:
    assert is_test_file("tests.conftest")
    assert is_test_file("tests.test_runner")
    assert not is_test_file("tests.support.app")
    assert not is_test_file("pytest")
    assert module_name(ROOT / "tests" / "support" / "app.py") == "tests.support.app"
    for source, expected in [
        ("from tests.conftest import base_env", "tests.conftest"),
        ("import tests.test_runner as runner", "tests.test_runner"),
        ("from tests import test_runner", "tests.test_runner"),
        ("from .. import conftest", "tests.conftest"),
        ("from ..test_ui import Browser", "tests.test_ui"),
        ("def later():\n    from tests.test_ui import Browser", "tests.test_ui"),
    ]:
        found = imports_in(source, "tests.support.example")
        assert expected in found, (source, found)
