"""Fetch the Worker's Python packages for Pyodide 314 from PyPI into a cache dir.

Versions come from pyproject.toml's `[project].dependencies` as Pyodide reads
them (the `workers-runtime-sdk` pin applies on emscripten only), the list
`pywrangler deploy` bundles, so the harness loads exactly what the Worker ships.
Nothing here is committed: the cache is gitignored.

- pure wheels (`py3-none-any`): jinja2, pydantic, typing-extensions, ... and
  the `workers-runtime-sdk` (the in-runtime `workers` package);
- pydantic-core: the `cp314-cp314-pyemscripten_2026_0_wasm32` wheel;
- markupsafe: its sdist's `src/markupsafe` without `_speedups.c` (markupsafe
  then uses its pure-Python fallback), copied to `<cache>/markupsafe/`.

Usage: python fetch_packages.py [--cache DIR] [--pyproject FILE]
Idempotent: a stamp file records what was fetched; a second run with the same
pins does nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # run by a Python without the venv: pip always carries a copy
    # The same library vendored: mypy sees two distinct types for one name.
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[assignment]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_CACHE = HERE / ".cache" / "packages"
STAMP = "fetched.json"

PYODIDE_PLATFORM = "pyemscripten_2026_0_wasm32"
PYTHON_VERSION = "3.14"
SDK = "workers-runtime-sdk"
SOURCE_ONLY = {"markupsafe"}
NATIVE = {"pydantic-core"}

_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([A-Za-z0-9_.\-+!]+)\s*$")
_PIN_VERSION = re.compile(r"^[A-Za-z0-9_.\-+!]+$")


def _canonical(name: str) -> str:
    return str(canonicalize_name(name))


def read_pins(pyproject: Path) -> dict[str, str]:
    """name -> version for every runtime dependency the Worker gets under Pyodide, the workers
    SDK among them (pinned for emscripten only, where `pywrangler` reads it too); each must
    be one `==` version."""
    data = tomllib.loads(pyproject.read_text("utf-8"))
    pins: dict[str, str] = {}
    for line in data["project"].get("dependencies", []):
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(PYODIDE_MARKERS):
            continue
        exact = [s.version for s in requirement.specifier if s.operator == "=="]
        if len(exact) != 1 or len(requirement.specifier) != 1:
            raise SystemExit(
                f"{pyproject}: {line!r} is not pinned with == (the harness needs exact versions)"
            )
        pins[_canonical(requirement.name)] = exact[0]
    if SDK not in pins:
        raise SystemExit(
            f"{pyproject}: [project.dependencies] must pin {SDK}==<version>"
            ' for sys_platform == "emscripten" (the SDK the deploy bundles)'
        )
    return pins


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"pip failed: {' '.join(args)}")


def _download_pure(specs: list[str], dest: Path) -> None:
    _pip(
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        "any",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "py",
        "--dest",
        str(dest),
        *specs,
    )


def _download_native(spec: str, dest: Path) -> None:
    abi = "cp" + PYTHON_VERSION.replace(".", "")
    _pip(
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        PYODIDE_PLATFORM,
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        abi,
        "--dest",
        str(dest),
        spec,
    )


def _markupsafe_from_sdist(version: str, cache: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # pip prepares the sdist's metadata (in an isolated build env) but builds nothing.
        _pip("download", "--no-deps", "--no-binary=:all:", "--dest", tmp, f"markupsafe=={version}")
        archives = list(Path(tmp).glob("*.tar.gz"))
        if len(archives) != 1:
            raise SystemExit(f"expected one markupsafe sdist, got {archives}")
        target = cache / "markupsafe"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        prefix = None
        with tarfile.open(archives[0]) as archive:
            for member in archive.getmembers():
                parts = Path(member.name).parts
                # <name>-<version>/src/markupsafe/<file>
                if len(parts) == 4 and parts[1:3] == ("src", "markupsafe") and member.isfile():
                    if parts[3].endswith(".c"):
                        continue  # no C speedups under Pyodide: the pure fallback is used
                    prefix = parts[0]
                    source = archive.extractfile(member)
                    assert source is not None
                    (target / parts[3]).write_bytes(source.read())
        if prefix is None or not (target / "__init__.py").exists():
            raise SystemExit("markupsafe sdist has no src/markupsafe/__init__.py")


# Markers evaluated as Pyodide 314 in workerd would see them.
PYODIDE_MARKERS = {
    "python_version": PYTHON_VERSION,
    "python_full_version": PYTHON_VERSION + ".0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "os_name": "posix",
    "extra": "",
}


def check_consistent(wheels: Path, pins: dict[str, str]) -> list[str]:
    """Each wheel's own requirements must be met by the pins, or the Worker would not import."""
    problems = []
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            lines = archive.read(metadata).decode("utf-8").splitlines()
        for line in lines:
            if not line.startswith("Requires-Dist:"):
                continue
            requirement = Requirement(line.removeprefix("Requires-Dist:").strip())
            if requirement.marker and not requirement.marker.evaluate(PYODIDE_MARKERS):
                continue
            name = _canonical(requirement.name)
            if name not in pins:
                problems.append(f"{wheel.name} needs {requirement}, which is not pinned")
            elif not requirement.specifier.contains(pins[name], prereleases=True):
                problems.append(f"{wheel.name} needs {requirement}, pinned {name}=={pins[name]}")
    return problems


def fetch(cache: Path, pins: dict[str, str]) -> None:
    stamp = cache / STAMP
    if stamp.exists() and json.loads(stamp.read_text("utf-8")) == pins:
        print(f"packages up to date in {cache}")
        return
    shutil.rmtree(cache, ignore_errors=True)
    wheels = cache / "wheels"
    wheels.mkdir(parents=True)
    pure = [
        f"{name}=={version}" for name, version in pins.items() if name not in SOURCE_ONLY | NATIVE
    ]
    _download_pure(pure, wheels)
    for name in sorted(NATIVE & pins.keys()):
        _download_native(f"{name}=={pins[name]}", wheels)
    if "markupsafe" in pins:
        _markupsafe_from_sdist(pins["markupsafe"], cache)
    found = sorted(path.name for path in wheels.glob("*.whl"))
    if len(found) != len(pins) - len(SOURCE_ONLY & pins.keys()):
        raise SystemExit(f"expected a wheel for each pin, got {found}")
    problems = check_consistent(wheels, pins)
    if problems:
        shutil.rmtree(cache, ignore_errors=True)
        raise SystemExit(
            "the pinned runtime dependencies in pyproject.toml do not fit together:\n  "
            + "\n  ".join(problems)
        )
    stamp.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n", "utf-8")
    print(f"fetched {len(found)} wheels and markupsafe's source into {cache}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="NAME==VERSION",
        help="override one pin from pyproject.toml (local experiments only)",
    )
    args = parser.parse_args()
    pins = read_pins(args.pyproject)
    for override in args.pin:
        found = _PIN.match(override)
        if not found:
            parser.error(f"--pin {override!r}: expected NAME==VERSION")
        pins[_canonical(found.group(1))] = found.group(2)
    fetch(args.cache.resolve(), pins)


if __name__ == "__main__":
    main()
