"""The built wheel is the product: a non-editable install carries both packages and applies
the D1 migrations from its own files, with no checkout on the path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_MIGRATIONS = ROOT / "src" / "scheduling" / "migrations"
# What the build reads: the project table, the readme it names, the two package roots.
BUILD_INPUTS = ("pyproject.toml", "README.md", "src", "fake_core")

APPLY_FROM_THE_INSTALL = """
import json, sqlite3, sys
from scheduling.runtimes.cpython import sqlite_d1 as migrations
connection = sqlite3.connect(":memory:", isolation_level=None)
applied = migrations.apply_migrations(connection)
found = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
tables = sorted(row[0] for row in found)
print(json.dumps({"applied": applied, "dir": str(migrations.MIGRATIONS_DIR),
                  "module": migrations.__file__, "prefix": sys.prefix, "tables": tables}))
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the build inputs (the checkout stays clean)."""
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    # No build isolation: the venv's setuptools (pinned in the lock file) builds it, offline.
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--wheel-dir",
        str(out),
        str(source),
        cwd=source,
    )
    [built] = out.glob("dee_wan_scheduling-*.whl")
    return built


@pytest.fixture(scope="module")
def python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Python of a fresh venv with the wheel installed (no checkout on its path)."""
    target = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(target)
    pip = (sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install")
    run(*pip, "--quiet", "--no-deps", "--no-index", str(wheel), cwd=target)
    return str(target / "bin" / "python")


def test_the_wheel_carries_both_packages_and_the_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package, folder in (
        ("scheduling", ROOT / "src" / "scheduling"),
        ("fake_core", ROOT / "fake_core"),
    ):
        for module in folder.rglob("*.py"):
            assert f"{package}/{module.relative_to(folder).as_posix()}" in names, module
    shipped = sorted(n for n in names if n.startswith("scheduling/migrations/"))
    expected = sorted(f"scheduling/migrations/{p.name}" for p in SOURCE_MIGRATIONS.glob("*.sql"))
    assert expected
    assert shipped == expected
    assert not [n for n in names if n.startswith(("tests/", "bench/", "scripts/"))]


def test_the_wheel_carries_the_plugin_contract_and_prints_it(
    wheel: Path, python: str, tmp_path: Path
) -> None:
    contract = (ROOT / "contract" / "plugin-contract.json").read_text("utf-8")
    assert zipfile.ZipFile(wheel).read("scheduling/plugin-contract.json").decode() == contract
    assert run(python, "-m", "scheduling", "contract", cwd=tmp_path).stdout == contract


def test_a_non_editable_install_applies_the_migrations_it_carries(
    python: str, tmp_path: Path
) -> None:
    # Run from an empty folder: only the install is importable, not this checkout.
    seen = json.loads(run(python, "-c", APPLY_FROM_THE_INSTALL, cwd=tmp_path).stdout)
    assert Path(seen["module"]).is_relative_to(Path(seen["prefix"]))
    assert Path(seen["dir"]).is_relative_to(Path(seen["prefix"]))
    assert seen["applied"] == sorted(p.name for p in SOURCE_MIGRATIONS.glob("*.sql"))
    assert {"schedules", "installations", "d1_migrations"} <= set(seen["tables"])
