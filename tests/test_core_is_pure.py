"""The core imports no runtime: no `js`, `pyodide`, `workers`, `sqlite3` or HTTP library."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "src" / "scheduling"
FORBIDDEN = {
    "js",
    "pyodide",
    "workers",
    "sqlite3",
    "httpx",
    "aiohttp",
    "requests",
    "urllib3",
    "http.client",
    "uvicorn",
    "cryptography",
    "socket",
    "asyncio.streams",
}


def _core_modules() -> list[Path]:
    return [p for p in CORE.rglob("*.py") if "runtimes" not in p.relative_to(CORE).parts]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_core_has_modules_to_check() -> None:
    assert len(_core_modules()) > 10


def test_core_imports_no_runtime() -> None:
    offenders = {}
    for path in _core_modules():
        bad = {
            name for name in _imports(path) if name in FORBIDDEN or name.split(".")[0] in FORBIDDEN
        }
        if bad:
            offenders[str(path.relative_to(CORE))] = sorted(bad)
    assert offenders == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import sqlite3\nfrom js import fetch\n")
    assert _imports(sample) == {"sqlite3", "js"}
