"""What the code imports is declared in pyproject.toml, and requirements/lock.txt pins exactly
what pyproject.toml allows: every declared requirement, at a version inside its range."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
LOCK = ROOT / "requirements" / "lock.txt"
LOCKED_EXTRAS = ("cpython", "test", "docs")
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)")

# Imported, but not from PyPI: this project's own packages and modules, and what only the
# Workers runtime (Pyodide) provides. `pip` is the fallback of fetch_packages.py for a
# Python without `packaging`, where pip's vendored copy stands in.
NOT_FROM_PYPI = {
    "scheduling",
    "fake_core",
    "tests",
    "bench",
    "scripts",
    "entry",
    "js",
    "pyodide",
    "workers",
    "_cloudflare_compat_flags",
    "pip",
}


def declared() -> list[Requirement]:
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    lines = [*project["dependencies"], *(line for name in LOCKED_EXTRAS for line in extras[name])]
    return [Requirement(line) for line in lines]


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text("utf-8").splitlines():
        found = PIN.match(line)
        if found:
            pins[canonicalize_name(found.group(1))] = found.group(2)
    return pins


def third_party_imports() -> set[str]:
    names: set[str] = set()
    for folder in ("src", "fake_core", "tests", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if {"node_modules", ".cache"} & set(path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in NOT_FROM_PYPI}


def test_the_lock_pins_every_declared_requirement_inside_its_range() -> None:
    pins = locked()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements/lock.txt: run scripts/lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements/lock.txt has {name}=={pins[name]}, outside {requirement}: "
            "run scripts/lock"
        )


def test_the_installed_versions_are_the_locked_ones() -> None:
    pins = locked()
    for name in (canonicalize_name(r.name) for r in declared()):
        installed = importlib.metadata.version(name)
        assert installed == pins[name], (
            f"{name} {installed} is installed, the lock says {pins[name]}: "
            "bash scripts/test reinstalls the venv from the lock"
        )


def test_every_imported_package_is_declared() -> None:
    providers = importlib.metadata.packages_distributions()
    names = {canonicalize_name(r.name) for r in declared()}
    undeclared = {
        module: sorted(canonicalize_name(d) for d in providers.get(module, ["?"]))
        for module in third_party_imports()
        if not names & {canonicalize_name(d) for d in providers.get(module, [])}
    }
    assert undeclared == {}
