"""What the code imports is declared in pyproject.toml; requirements/lock.txt and
requirements/deploy.txt pin exactly what pyproject.toml allows, every file with its hash; and the
deploy tools' pins agree wherever they are written (pyproject.toml, the locks, package.json and
package-lock.json, the Pyodide harness)."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from scripts import deploy
from tests.pyodide_harness import fetch_packages

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
LOCK = ROOT / "requirements" / "lock.txt"
DEPLOY_LOCK = ROOT / "requirements" / "deploy.txt"
LOCKED_EXTRAS = ("cpython", "test", "docs")
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
SDK = canonicalize_name("workers-runtime-sdk")

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
    "_harness_probe",  # registered by tests/pyodide_harness/startup.mjs
    "pip",
}


def declared(extras: tuple[str, ...] = LOCKED_EXTRAS) -> list[Requirement]:
    """What the venv of these extras installs on this Python (the SDK's pin is Pyodide's)."""
    project = PYPROJECT["project"]
    optional = project["optional-dependencies"]
    lines = [*project["dependencies"], *(line for name in extras for line in optional[name])]
    requirements = [Requirement(line) for line in lines]
    return [r for r in requirements if r.marker is None or r.marker.evaluate()]


def workers_extra() -> list[Requirement]:
    return [Requirement(line) for line in PYPROJECT["project"]["optional-dependencies"]["workers"]]


def entries(lock: Path) -> dict[str, str]:
    """Each requirement of a lock as one line (its `\\` continuations joined), by name."""
    joined = lock.read_text("utf-8").replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in joined.splitlines():
        pin = PIN.match(line)
        if pin:
            found[canonicalize_name(pin.group(1))] = line
        elif line.strip() and not line.lstrip().startswith("#"):
            found[line.split()[0]] = line  # not an == pin: the hash test names it
    return found


def locked(lock: Path = LOCK) -> dict[str, str]:
    pins: dict[str, str] = {}
    for name, line in entries(lock).items():
        pin = PIN.match(line)
        if pin:
            pins[name] = pin.group(2)
    return pins


def third_party_imports() -> set[str]:
    names: set[str] = set()
    for folder in ("src", "fake_core", "tests", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            # bench/fixtures holds others' code (Cloudflare's FastAPI example), with its own
            # requirements, run only under the Pyodide harness.
            if {"node_modules", ".cache", "fixtures"} & set(path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in NOT_FROM_PYPI}


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [(LOCK, declared), (DEPLOY_LOCK, workers_extra)],
    ids=["lock.txt", "deploy.txt"],
)
def test_the_lock_pins_every_declared_requirement_inside_its_range(
    lock: Path, requirements: object
) -> None:
    assert callable(requirements)
    pins = locked(lock)
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {lock.name}: run scripts/lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{lock.name} has {name}=={pins[name]}, outside {requirement}: run scripts/lock"
        )


@pytest.mark.parametrize("lock", [LOCK, DEPLOY_LOCK], ids=["lock.txt", "deploy.txt"])
def test_every_locked_requirement_is_one_version_with_its_hashes(lock: Path) -> None:
    """`pip install --require-hashes` refuses a lock with one entry unpinned or unhashed."""
    found = entries(lock)
    assert len(found) > 5
    for name, line in found.items():
        assert PIN.match(line), f"{lock.name}: {name} is not pinned with ==: {line}"
        assert HASH.search(line), f"{lock.name}: {name} has no --hash: run scripts/lock"


def test_the_installs_require_the_hashes() -> None:
    """Both installers refuse a file whose hash is not in the lock."""
    lib = (ROOT / "scripts" / "lib.sh").read_text("utf-8")
    assert '--require-hashes --only-binary=:all: -r "$1"' in lib
    assert "install_locked requirements/lock.txt" in lib
    assert "--constraint" not in lib  # a constraint's hash is not required
    script = (ROOT / "scripts" / "deploy.py").read_text("utf-8")
    assert '"--require-hashes", "--only-binary=:all:", "-r", str(DEPLOY_LOCK)' in script
    assert '["npm", "ci"' in script  # npm ci checks every package against its integrity


def test_the_two_locks_agree_on_every_package_both_install() -> None:
    """scripts/deploy installs deploy.txt into the venv lock.txt made: nothing changes there."""
    tests, deploying = locked(LOCK), locked(DEPLOY_LOCK)
    shared = tests.keys() & deploying.keys()
    assert {"click", "pygments", "pydantic"} <= shared
    assert {name: deploying[name] for name in shared} == {name: tests[name] for name in shared}


def _only_version(specifier: SpecifierSet) -> str:
    pinned = [s.version for s in specifier if s.operator == "=="]
    assert len(pinned) == 1, f"{specifier} is not one exact version"
    return pinned[0]


def test_the_sdk_the_deploy_bundles_is_the_one_the_harness_runs() -> None:
    """pywrangler resolves `[project.dependencies]` plus an unpinned `workers-runtime-sdk` for
    Pyodide: the pin there, for emscripten only, decides the version. The harness fetches
    that pin, pywrangler's own copy (deploy.txt, the workers extra) is the same, and CPython
    never installs it."""
    under_pyodide = [
        Requirement(line)
        for line in [*PYPROJECT["project"]["dependencies"], SDK]  # what pywrangler compiles
    ]
    sdk = SpecifierSet()
    for requirement in under_pyodide:
        marker = requirement.marker
        if canonicalize_name(requirement.name) == SDK and (
            marker is None or marker.evaluate(fetch_packages.PYODIDE_MARKERS)
        ):
            sdk &= requirement.specifier
    bundled = _only_version(sdk)
    assert fetch_packages.read_pins(ROOT / "pyproject.toml")[SDK] == bundled
    assert locked(DEPLOY_LOCK)[SDK] == bundled
    extra = {canonicalize_name(r.name): r for r in workers_extra()}
    assert _only_version(extra[SDK].specifier) == bundled
    assert SDK not in {canonicalize_name(r.name) for r in declared()}  # not on CPython
    assert SDK not in locked(LOCK)


def test_the_deploy_tools_are_pinned_exactly() -> None:
    extra = {canonicalize_name(r.name): r for r in workers_extra()}
    assert set(extra) == {"workers-py", "uv", SDK}
    for name, requirement in extra.items():
        assert _only_version(requirement.specifier) == locked(DEPLOY_LOCK)[name]
    # pywrangler refuses an older uv; scripts/deploy checks the same minimum.
    assert Version(locked(DEPLOY_LOCK)["uv"]) >= Version(".".join(map(str, deploy.MIN_UV)))


def test_the_wrangler_the_deploy_runs_is_pinned_with_its_node() -> None:
    """package.json pins one wrangler; package-lock.json holds that one with an integrity hash
    for every package; package.json's engines (what scripts/deploy checks) are wrangler's."""
    package = json.loads((ROOT / "package.json").read_text("utf-8"))
    lock = json.loads((ROOT / "package-lock.json").read_text("utf-8"))["packages"]
    pinned = package["devDependencies"]["wrangler"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), "an exact version, not a range"
    assert lock[""]["devDependencies"] == {"wrangler": pinned}
    assert lock["node_modules/wrangler"]["version"] == pinned
    assert lock["node_modules/wrangler"]["engines"]["node"] == package["engines"]["node"]
    assert lock[""]["engines"] == package["engines"]
    unhashed = [name for name, entry in lock.items() if name and "integrity" not in entry]
    assert unhashed == []
    # pywrangler 1.17 wants at least this wrangler (MIN_WRANGLER_VERSION) for Python Workers.
    assert Version(pinned) >= Version("4.127.1")


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
