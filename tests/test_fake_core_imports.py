"""fake_core stands on its own: of the plugin it imports only `scheduling.ports`, and its
modules import one another without a circle. Read from the source (the AST of every
module, imports inside functions and `TYPE_CHECKING` blocks included), not by importing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fake_core"
ALLOWED_FROM_THE_PLUGIN = {"scheduling.ports"}


def is_package(name: str) -> bool:
    return any((root / name.replace(".", "/")).is_dir() for root in (ROOT, ROOT / "src"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, package: str) -> Iterator[str]:
    """Every module the source imports. `from a import b` is `a.b` when `a` is a package
    (b may be a submodule), else `a`. Relative imports are read from `package`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if is_package(base):
                yield from (f"{base}.{alias.name}" for alias in node.names)
            else:
                yield base


def imports_of(path: Path) -> set[str]:
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    return set(imported(path.read_text("utf-8"), package))


MODULES = {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_is_read() -> None:
    assert {"fake_core", "fake_core.core", "fake_core.app", "fake_core.home"} <= set(MODULES)


def test_of_the_plugin_only_its_ports() -> None:
    from_the_plugin = {
        (module, name)
        for module, names in MODULES.items()
        for name in names
        if name == "scheduling" or name.startswith("scheduling.")
    }
    assert {name for _, name in from_the_plugin} <= ALLOWED_FROM_THE_PLUGIN, sorted(from_the_plugin)
    assert from_the_plugin, "the in-process transport plugs into the plugin's ports"


def test_no_test_code_and_no_dev_stack() -> None:
    for module, names in MODULES.items():
        for name in names:
            assert name.split(".")[0] not in ("tests", "scripts"), (module, name)


def test_no_import_circle() -> None:
    graph = {
        module: {name for name in names if name in MODULES and name != module}
        for module, names in MODULES.items()
    }
    # The package's __init__ re-exports its modules; a module naming `fake_core` means it.
    graph = {m: deps - {"fake_core"} for m, deps in graph.items()}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None


def test_the_check_sees_what_it_must() -> None:
    """Plugin imports are found wherever they are written, and named by module."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from scheduling.app import App\n"
        "def f():\n    import scheduling.runtimes.cpython.dev_vars\n"
        "from scheduling import ports\n"
        "from scheduling.ports import TransportError\n"
        "from . import core\n"
        "from .wire import Reply\n"
    )
    assert set(imported(source, "fake_core")) == {
        "typing",
        "scheduling.app",
        "scheduling.runtimes.cpython.dev_vars",
        "scheduling.ports",
        "fake_core.core",
        "fake_core.wire",
    }
