"""The sizes `src/` keeps: no module over 1,000 lines (the generated templates aside), and no
function over 50 lines of logic (lines that are neither blank, nor a comment, nor the
docstring, nested functions counted in their parent). A module holds one idea whole, so it
may be long; a function may not.

A file name may repeat across packages: each layer has its own module for one concern
(`domain/schedules.py`, `repository/schedules.py`, `actions/schedules.py`), imported by its
path.

`KNOWN` is where an offender would have to be named, out loud: each check fails for an
offender not listed, and also for a listed one that no longer offends. It is empty."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_MODULE_LINES = 1000
MAX_FUNCTION_LOGIC_LINES = 50
GENERATED = {"scheduling/http/html/compiled_templates.py"}

KNOWN: dict[str, set[str]] = {
    "modules over 1,000 lines": set(),
    "functions over 50 lines of logic": set(),
}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name not in GENERATED:
            yield name, path


def _logic_lines(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    docstring: set[int] = set()
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        docstring = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    end = function.end_lineno or first.lineno
    return sum(
        1
        for number in range(first.lineno, end + 1)
        if number not in docstring and lines[number - 1].strip()[:1] not in ("", "#")
    )


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Every function, named by where it sits (`Class.method`, `outer.inner`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from _functions(node, f"{name}.")
        else:
            yield from _functions(node, prefix)


def modules_over_1000_lines() -> set[str]:
    return {
        name
        for name, path in _modules()
        if len(path.read_text("utf-8").splitlines()) > MAX_MODULE_LINES
    }


def functions_over_50_lines_of_logic() -> set[str]:
    found = set()
    for name, path in _modules():
        source = path.read_text("utf-8")
        lines = source.splitlines()
        for function_name, node in _functions(ast.parse(source)):
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if _logic_lines(lines, node) > MAX_FUNCTION_LOGIC_LINES:
                found.add(f"{name}:{function_name}")
    return found


CHECKS = {
    "modules over 1,000 lines": modules_over_1000_lines,
    "functions over 50 lines of logic": functions_over_50_lines_of_logic,
}


@pytest.mark.parametrize("check", CHECKS)
def test_no_new_offender_and_no_stale_known_one(check: str) -> None:
    offenders = CHECKS[check]()
    assert offenders - KNOWN[check] == set(), f"{check}: fix these (do not list them)"
    assert KNOWN[check] - offenders == set(), f"{check}: these no longer offend; unlist them"


def _longest(source: str) -> int:
    [(_, node)] = list(_functions(ast.parse(source)))
    assert isinstance(node, ast.FunctionDef)
    return _logic_lines(source.splitlines(), node)


def test_lines_of_logic_leave_out_the_docstring_blanks_and_comments() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LOGIC_LINES))
    source = f'def f():\n    """Doc.\n\n    more."""\n    # why\n\n{body}'
    assert _longest(source) == MAX_FUNCTION_LOGIC_LINES
    assert _longest(source + "    return x0\n") == MAX_FUNCTION_LOGIC_LINES + 1
