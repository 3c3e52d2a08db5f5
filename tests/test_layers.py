"""The plugin's layers, read from the source: no module imports a layer above its own, no two
packages import each other, and no route handler (in a page's room) grows past 30 lines.

Read from the AST of every module (imports inside functions and `TYPE_CHECKING` blocks
included), not by importing. A new package or top-level module must be given its layer
below, or this test fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "scheduling"

# Bottom to top. A unit is a top-level module or a package of `scheduling` (`http`'s
# subpackages and each runtime count as their own). A unit may import units of its own
# layer or of a layer below, never above.
LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "the ports and what every layer shares",
        frozenset({"ports", "limits", "safe_json", "events", "concurrency"}),
    ),
    ("the domain: rules and records, no I/O", frozenset({"domain"})),
    (
        "configuration, the ports bundle, the failure throttle, the contract",
        frozenset({"config", "services", "failure_throttle", "plugin_contract"}),
    ),
    (
        "the Dee Wan client, the notification channels and the repository",
        frozenset({"dee_wan", "channels", "repository"}),
    ),
    (
        "the use cases, the runner and the operator's read models",
        frozenset({"actions", "runner", "operator"}),
    ),
    ("HTTP: requests, responses, guards", frozenset({"http"})),
    ("what every page shares: layout, cards, rendering", frozenset({"http.html"})),
    ("the pages, one room each, and the agents' MCP endpoint", frozenset({"pages", "mcp"})),
    ("the app: routes, refusals, the tick", frozenset({"app"})),
    (
        "the runtimes and the command line",
        frozenset({"runtimes", "runtimes.cpython", "runtimes.workers", "__main__"}),
    ),
]
LEVEL = {unit: level for level, (_, units) in enumerate(LAYERS) for unit in units}
HANDLER_MAX_LINES = 30


def module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """`scheduling.http.html.render` is in `http.html`; `scheduling.domain.pins` in `domain`."""
    parts = module.split(".")[1:]
    if (
        parts[:1] in (["http"], ["runtimes"])
        and len(parts) > 1
        and (CORE / parts[0] / parts[1]).is_dir()
    ):
        return ".".join(parts[:2])
    return parts[0] if parts else ""


def imported(source: str, module: str) -> Iterator[str]:
    """The plugin's modules `source` imports; `from a import b` names `a.b` when that is a
    module of the plugin (b may be a submodule), else `a`."""
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


MODULES = {module_name(path): path for path in sorted(CORE.rglob("*.py"))}


def unit_imports() -> dict[str, set[str]]:
    """unit -> the other units its modules import."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        unit = unit_of(module)
        names = imported(path.read_text("utf-8"), module)
        found = {unit_of(name) for name in names if name.startswith("scheduling.")}
        graph.setdefault(unit, set()).update(found - {unit, ""})
    return graph


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{unit} imports {other}"
        for unit, others in graph.items()
        for other in others
        if LEVEL[other] > LEVEL[unit]
    )


def mutual(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{a} <-> {b}" for a, others in graph.items() for b in others if a < b and a in graph[b]
    )


def cycle(graph: dict[str, set[str]]) -> list[str]:
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        return list(exc.args[1])
    return []


GRAPH = unit_imports()


def test_units_are_named_by_package() -> None:
    assert unit_of("scheduling.http.html") == "http.html"
    assert unit_of("scheduling.http.html.render") == "http.html"
    assert unit_of("scheduling.pages.content.content_page") == "pages"
    assert unit_of("scheduling.http.guards") == "http"
    assert unit_of("scheduling.runtimes.cpython.server") == "runtimes.cpython"
    assert unit_of("scheduling.domain.pins") == "domain"
    assert unit_of("scheduling.app") == "app"


def test_every_unit_has_its_layer() -> None:
    assert {"domain", "actions", "pages", "app"} <= set(GRAPH)
    assert sorted(set(GRAPH) - set(LEVEL)) == [], "give each new package its layer in LAYERS"


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert upward(GRAPH) == []


def test_no_two_packages_import_each_other_and_no_circle() -> None:
    assert mutual(GRAPH) == []
    assert cycle(GRAPH) == []


def test_the_entry_imports_the_workers_runtime_only() -> None:
    source = (ROOT / "src" / "entry.py").read_text("utf-8")
    units = {unit_of(n) for n in imported(source, "entry") if n.startswith("scheduling.")}
    assert units == {"runtimes.workers"}


# What only a request uses; the entry's top level imports it too, so that it is in the
# memory snapshot and an isolate's first request imports nothing.
REQUEST_UNITS = {"app", "http", "http.html", "pages", "actions"}


def imported_at_import(source: str, module: str) -> Iterator[str]:
    """What running the module's top level imports: not inside functions, nor under
    `if TYPE_CHECKING:`."""
    body = list(ast.parse(source).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            body.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield from imported(ast.unparse(node), module)
            continue
        body.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def loaded_by(module: str, source: str) -> set[str]:
    """Every module name the top level of `source` loads, following the plugin's modules."""
    seen: set[str] = set()
    todo = list(imported_at_import(source, module))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in MODULES:
            todo.extend(imported_at_import(MODULES[name].read_text("utf-8"), name))
    return seen


def test_the_snapshot_holds_the_whole_app_and_no_template_source() -> None:
    """The entry's top level imports the runner and the HTTP app with its pages, so an
    isolate's first page imports nothing; the templates come compiled, their sources (and
    difflib, for a misspelt zone only) stay out."""
    loaded = loaded_by("entry", (ROOT / "src" / "entry.py").read_text("utf-8"))
    units = {unit_of(name) for name in loaded if name.startswith("scheduling.")}
    assert {"runner", "repository", "config", "domain", "runtimes.workers"} <= units
    assert units >= REQUEST_UNITS
    assert {"scheduling.app", "scheduling.http.html.compiled_templates"} <= loaded
    assert "jinja2" in {name.split(".")[0] for name in loaded}
    sources = {name for name in loaded if name.endswith("_template")}
    assert sources | ({"scheduling.pages.template_sources", "difflib"} & loaded) == set()
    # The rare routes' modules wait for their own first request (app.py says why).
    rare = {
        "scheduling.pages.activation.activate",
        "scheduling.pages.activation.activation_codes",
        "scheduling.pages.admin.delete_data",
        "scheduling.pages.admin.operator_page",
        "scheduling.pages.admin.operator_charts",
        "scheduling.pages.admin.attention",
        "scheduling.mcp",
        "scheduling.mcp.endpoint",
    }
    assert rare & loaded == set()


def handler_lengths() -> dict[str, int]:
    """Every route handler's length: an `async def` of the rooms taking `(request, services…)`."""
    lengths = {}
    for path in sorted((CORE / "pages").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef):
                names = [arg.arg for arg in node.args.args[:2]]
                if names != ["request", "services"]:
                    continue
                assert node.end_lineno is not None
                lengths[f"{path.name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return lengths


def test_no_handler_function_is_over_30_lines() -> None:
    lengths = handler_lengths()
    assert len(lengths) >= 30
    assert {name: n for name, n in lengths.items() if n > HANDLER_MAX_LINES} == {}


def test_no_route_catches_a_refusal() -> None:
    """A refused form is shown again by its route's `again`, which `App.handle` calls: no
    module of handlers (a room's `_page` or `_routes`, or a small page's one module) catches
    a refusal."""
    catching = []
    for path in sorted((CORE / "pages").rglob("*.py")):
        if path.name.endswith(("_read.py", "_view.py", "_template.py")):
            continue  # what a page reads, or shows: no handler there
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            caught = node.type if isinstance(node, ast.ExceptHandler) else None
            if caught is not None and "Refusal" in ast.unparse(caught):
                catching.append(f"{path.name}:{caught.lineno}")
    assert catching == []


@pytest.mark.parametrize(
    ("graph", "finds"),
    [
        ({"domain": {"repository"}, "repository": {"domain"}}, "upward and mutual"),
        ({"actions": {"runner"}, "runner": {"dee_wan"}, "dee_wan": set()}, "nothing"),
        ({"actions": {"runner"}, "runner": {"actions"}}, "mutual"),
        ({"http": {"http.html"}, "http.html": set()}, "upward"),
    ],
)
def test_the_check_sees_what_it_must(graph: dict[str, set[str]], finds: str) -> None:
    assert bool(upward(graph)) == ("upward" in finds)
    assert bool(mutual(graph)) == ("mutual" in finds)
    assert bool(cycle(graph)) == ("mutual" in finds)


def test_the_reader_finds_imports_wherever_they_are_written() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from scheduling.app import App\n"
        "def f():\n    import scheduling.runtimes.cpython.server\n"
        "from scheduling.domain import pins\n"
        "from ..repository.schedules import listing\n"
    )
    found = set(imported(source, "scheduling.actions.create"))
    assert {
        "scheduling.app",
        "scheduling.runtimes.cpython.server",
        "scheduling.domain.pins",
        "scheduling.repository.schedules",
    } <= found
    assert {unit_of(name) for name in found if name.startswith("scheduling.")} == {
        "app",
        "runtimes.cpython",
        "domain",
        "repository",
    }
