"""Deploy the Worker with the pinned tools, after saying in one line what is missing.

Run from the repository root as `python3 -m scripts.deploy [--check]` (what `scripts/deploy`
does). Only the standard library: it runs before any venv exists.

The steps, each only once the one before it succeeded:
1. the prerequisites nothing here can install: Node.js at the version the pinned wrangler
   needs (`engines` in package.json), the hosts the tools download from and upload to (those
   of pywrangler's first run included), and a `wrangler.jsonc` with the D1 database id filled
   in, `global_fetch_strictly_public` among its flags, `ENVIRONMENT` set to `production` and
   an https `PUBLIC_ORIGIN`.
   `--check` stops here (and checks uv);
2. the tools, exactly as locked: `npm ci` (wrangler, package-lock.json) and
   `pip install --require-hashes -r requirements/deploy.txt` into .venv (pywrangler, uv);
3. uv at a version pywrangler accepts;
4. the remote database's applied migrations (`d1_migrations`) read: one this checkout does
   not hold means newer code migrated it, and the deploy stops;
5. `wrangler d1 migrations apply <database> --remote`, then `pywrangler deploy`, which
   vendors the pinned packages (`python_modules/`) and runs `wrangler deploy`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from scripts.wrangler_config import read_config

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_JSON = ROOT / "package.json"
DEPLOY_LOCK = ROOT / "requirements" / "deploy.txt"
VENV = ROOT / ".venv"
WRANGLER_CONFIG = ROOT / "wrangler.jsonc"
MIGRATIONS_DIR = ROOT / "src" / "scheduling" / "migrations"
EXAMPLE_CONFIG = "wrangler.example.jsonc"

# pywrangler 1.17 refuses an older uv (MIN_UV_VERSION in its utils.py).
MIN_UV = (0, 13, 4)
# What the deploy reaches: npm (wrangler), PyPI (pywrangler, uv and the Worker's packages),
# Pyodide's package index (pywrangler resolves the Worker's packages against it), on a first
# run uv's CPython build (releases.astral.sh, then GitHub) and the Pyodide cross-build
# environment (GitHub release downloads, which github.com hands on to
# release-assets.githubusercontent.com), Cloudflare's API.
HOSTS = (
    "registry.npmjs.org",
    "pypi.org",
    "files.pythonhosted.org",
    "index.pyodide.org",
    "releases.astral.sh",
    "github.com",
    "release-assets.githubusercontent.com",
    "api.cloudflare.com",
)
NETWORK_TIMEOUT_S = 10.0
PLACEHOLDER_ID = re.compile(r"^[0-]*$")


def version_tuple(text: str) -> tuple[int, ...] | None:
    """(22, 12, 0) for `v22.12.0`, `uv 0.13.9 (…)` or `>=22.12.0`; None without one."""
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if found is None:
        return None
    return tuple(int(part or 0) for part in found.groups())


def dotted(version: Sequence[int]) -> str:
    return ".".join(str(part) for part in version)


def node_minimum(package_json: Path = PACKAGE_JSON) -> tuple[int, ...]:
    """The Node.js the pinned wrangler needs: package.json's `engines.node` (`>=X.Y.Z`)."""
    wanted = json.loads(package_json.read_text("utf-8"))["engines"]["node"]
    minimum = version_tuple(wanted)
    if not wanted.startswith(">=") or minimum is None:
        raise ValueError(f"package.json engines.node must read >=X.Y.Z, not {wanted!r}")
    return minimum


def _output(command: Sequence[str]) -> str | None:
    """The first line a tool prints, or None when it is not there or fails."""
    try:
        done = subprocess.run(  # noqa: S603 (a fixed tool, no shell)
            command, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if lines else ""


def node_problem(minimum: tuple[int, ...]) -> str | None:
    wanted = f"Node.js >= {dotted(minimum)}"
    if shutil.which("node") is None:
        return f"{wanted} (node is not on PATH)"
    found = _output(["node", "--version"])
    have = version_tuple(found or "")
    if have is None:
        return f"{wanted} (`node --version` said {found!r})"
    if have < minimum:
        return f"{wanted} (this is {found}, which the pinned wrangler refuses)"
    if shutil.which("npm") is None:
        return f"npm (node {found} is there, npm is not)"
    return None


def uv_command() -> str | None:
    """The uv pywrangler will run: the pinned one in .venv, else one on PATH."""
    pinned = VENV / "bin" / "uv"
    return str(pinned) if pinned.exists() else shutil.which("uv")


def uv_problem(uv: str | None) -> str | None:
    wanted = f"uv >= {dotted(MIN_UV)}"
    if uv is None:
        return f"{wanted} (not installed: `bash scripts/deploy` installs the pinned one)"
    found = _output([uv, "--version"])
    have = version_tuple(found or "")
    if have is None:
        return f"{wanted} ({uv} does not run: {found!r})"
    if have < MIN_UV:
        return f"{wanted} ({uv} is {dotted(have)})"
    return None


def _reachable(url: str, timeout_s: float) -> bool:
    request = urllib.request.Request(url, method="HEAD")  # noqa: S310 (fixed https URLs)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):  # noqa: S310
            return True
    except urllib.error.HTTPError:
        return True  # it answered: the host is reachable
    except (OSError, ValueError):
        return False


def unreachable(urls: Iterable[str], timeout_s: float = NETWORK_TIMEOUT_S) -> list[str]:
    """The URLs that do not answer at all (any HTTP status is an answer), all tried at once."""
    listed = list(urls)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(listed) or 1) as pool:
        answers = list(pool.map(lambda url: _reachable(url, timeout_s), listed))
    return [url for url, answered in zip(listed, answers, strict=True) if not answered]


def network_problem(
    hosts: Sequence[str] = HOSTS, probe: Callable[[Iterable[str]], list[str]] = unreachable
) -> str | None:
    """The hosts `probe` finds unreachable, by name (`probe`: `unreachable`, or a test's)."""
    missing = probe(f"https://{host}/" for host in hosts)
    if not missing:
        return None
    names = ", ".join(url.removeprefix("https://").rstrip("/") for url in missing)
    return f"network access to {names}"


def first_database(config: dict[str, Any]) -> dict[str, Any]:
    databases = config.get("d1_databases")
    if not isinstance(databases, list) or not databases or not isinstance(databases[0], dict):
        raise ValueError("it declares no d1_databases")
    return databases[0]


def config_problems(path: Path = WRANGLER_CONFIG) -> list[str]:
    """What the Worker's config lacks: the D1 id, the flag that keeps every fetch on the
    public Internet (webhook endpoints are URLs installations type in), production, and an
    https PUBLIC_ORIGIN."""
    fill = f"copy {EXAMPLE_CONFIG} to {path.name} and put in the id from `wrangler d1 create`"
    if not path.exists():
        return [f"{path.name} ({fill})"]
    try:
        config = read_config(path)
        database = first_database(config)
    except ValueError as exc:  # json.JSONDecodeError is one
        return [f"a readable {path.name} ({exc})"]
    problems = []
    if PLACEHOLDER_ID.match(str(database.get("database_id", ""))):
        problems.append(f"the D1 database id in {path.name} (still the placeholder: {fill})")
    flags = config.get("compatibility_flags")
    if not isinstance(flags, list) or "global_fetch_strictly_public" not in flags:
        problems.append(
            f"global_fetch_strictly_public in {path.name}'s compatibility_flags (without it a"
            " fetch to a host of the Worker's own zone reaches its origin server directly,"
            f" as {EXAMPLE_CONFIG} says)"
        )
    variables = config.get("vars")
    if not isinstance(variables, dict):
        variables = {}
    environment = variables.get("ENVIRONMENT")
    if environment != "production":
        problems.append(
            f'"ENVIRONMENT": "production" in {path.name}\'s vars'
            f" (it is {json.dumps(environment) if environment is not None else 'not set'})"
        )
    origin = variables.get("PUBLIC_ORIGIN")
    if not isinstance(origin, str) or not origin.startswith("https://"):
        problems.append(
            f"an https PUBLIC_ORIGIN in {path.name}'s vars (it is"
            f" {json.dumps(origin) if origin is not None else 'not set'}: the session cookie"
            " and Strict-Transport-Security need https)"
        )
    return problems


def missing(*, check_uv: bool) -> list[str]:
    """Every prerequisite that is not met, in words; empty when the deploy can start."""
    problems = [node_problem(node_minimum()), network_problem(), *config_problems()]
    if check_uv:
        problems.append(uv_problem(uv_command()))
    return [problem for problem in problems if problem is not None]


def say_missing(problems: list[str]) -> None:
    print(f"scripts/deploy: missing {'; '.join(problems)}", file=sys.stderr)


def _run(command: Sequence[str], env: dict[str, str] | None = None) -> None:
    print(f"\n== {' '.join(command)}", flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=True)  # noqa: S603 (fixed tools)


def install_tools() -> None:
    """wrangler from package-lock.json, pywrangler and uv from requirements/deploy.txt, each
    file checked against its recorded hash; skipped when already installed from these locks."""
    npm_stamp = ROOT / "node_modules" / ".deploy-lock-sha256"
    npm_lock = hashlib.sha256((ROOT / "package-lock.json").read_bytes()).hexdigest()
    if not npm_stamp.exists() or npm_stamp.read_text("utf-8").strip() != npm_lock:
        _run(["npm", "ci", "--no-audit", "--no-fund"])
        npm_stamp.write_text(npm_lock + "\n", "utf-8")
    pip_lock = hashlib.sha256(DEPLOY_LOCK.read_bytes()).hexdigest()[:16]
    pip_stamp = VENV / f".deploy-{pip_lock}"
    if not pip_stamp.exists():
        if not (VENV / "bin" / "python").exists():
            _run([sys.executable, "-m", "venv", str(VENV)])
        _run(
            [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet",
             "--require-hashes", "--only-binary=:all:", "-r", str(DEPLOY_LOCK)]
        )  # fmt: skip
        for old in VENV.glob(".deploy-*"):
            old.unlink()
        pip_stamp.touch()


def tools_env() -> dict[str, str]:
    # pywrangler runs `uv` and `npx --yes wrangler` from PATH: the pinned ones come first.
    path = os.pathsep.join([str(VENV / "bin"), str(ROOT / "node_modules" / ".bin")])
    return {**os.environ, "PATH": path + os.pathsep + os.environ.get("PATH", "")}


def database_name() -> str:
    return str(first_database(read_config(WRANGLER_CONFIG))["database_name"])


def _capture(command: Sequence[str], env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(  # noqa: S603 (fixed tools)
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout if done.returncode == 0 else done.stdout + done.stderr


def remote_migrations(
    name: str,
    env: dict[str, str],
    run: Callable[[list[str]], tuple[int, str]] | None = None,
) -> list[str]:
    """The migrations the remote database lists as applied (wrangler's `d1_migrations`); none
    for a database no migration has touched yet."""
    command = ["npx", "wrangler", "d1", "execute", name, "--remote", "--json",
               "--command", "SELECT name FROM d1_migrations ORDER BY name"]  # fmt: skip
    code, output = (run or (lambda asked: _capture(asked, env)))(command)
    if code != 0:
        if "no such table: d1_migrations" in output:
            return []
        raise subprocess.CalledProcessError(code, command, output)
    return [str(row["name"]) for result in json.loads(output) for row in result["results"]]


def code_behind(remote: Iterable[str]) -> list[str]:
    """What the remote database has applied that this checkout's migrations do not hold."""
    known = {path.name for path in MIGRATIONS_DIR.glob("*.sql")}
    return [name for name in remote if name not in known]


def deploy(env: dict[str, str], name: str) -> None:
    """The schema first, then the code: if the upload then fails, the database is ahead of
    the code still running, whose runner refuses to run until code that knows it is up."""
    _run(["npx", "wrangler", "d1", "migrations", "apply", name, "--remote"], env)
    _run([str(VENV / "bin" / "pywrangler"), "deploy"], env)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/deploy",
        description="Deploy the Worker with the pinned wrangler, pywrangler and uv.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only say what is missing (Node.js, uv, network, wrangler.jsonc); install nothing",
    )
    args = parser.parse_args(argv)
    problems = missing(check_uv=args.check)
    if problems:
        say_missing(problems)
        return 1
    if args.check:
        print("scripts/deploy: every prerequisite is there")
        return 0
    try:
        install_tools()
        problem = uv_problem(uv_command())
        if problem is not None:
            say_missing([problem])
            return 1
        env, name = tools_env(), database_name()
        unknown = code_behind(remote_migrations(name, env))
        if unknown:
            print(f"scripts/deploy: the remote database has migrations this code does not know"
                  f" ({', '.join(unknown)}): newer code migrated it, and this code would run"
                  " on a schema it cannot read; deploy that code (or a later one)",
                  file=sys.stderr)  # fmt: skip
            return 1
        deploy(env, name)
    except subprocess.CalledProcessError as failed:
        print(f"scripts/deploy: {' '.join(failed.cmd)} failed (exit {failed.returncode})",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
