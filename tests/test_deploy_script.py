"""`bash scripts/deploy`: before anything is installed it says, in one line, what is missing.

Each run is the real command from a copy of the files it reads (scripts/, package.json,
package-lock.json, requirements/deploy.txt), with stand-ins for `node`, `npm` and `uv` on
PATH that say a version and record that they ran. The network is cut by an HTTPS proxy on a
closed loopback port, so every host is unreachable on any machine.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from scripts import deploy
from tests.support.serve_process import free_port

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"
COPIED = (
    "scripts/__init__.py",
    "scripts/deploy",
    "scripts/deploy.py",
    "scripts/wrangler_config.py",
    "package.json",
    "package-lock.json",
    "requirements/deploy.txt",
    "wrangler.example.jsonc",
)
REAL_ID = "3f0c2a8e-6c1b-4d2e-9f7a-1b2c3d4e5f60"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for name in COPIED:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    return repo


def tool(bin_dir: Path, name: str, says: str) -> Path:
    """A stand-in on PATH: prints `says` and notes in ran.log that it ran."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(
        f'#!/bin/sh\necho "{name} $*" >> "{bin_dir}/ran.log"\necho "{says}"\n', "utf-8"
    )
    script.chmod(0o755)
    return script


def run(repo: Path, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        # Only the stand-ins: no node, npm or uv of this machine's can answer instead.
        "PATH": str(bin_dir),
        "HOME": str(repo.parent),
        "PYTHON": sys.executable,
        # Every HTTPS request goes to a port nothing listens on: no host answers.
        "https_proxy": f"http://127.0.0.1:{free_port()}",
        "HTTPS_PROXY": f"http://127.0.0.1:{free_port()}",
    }
    return subprocess.run(
        [BASH, str(repo / "scripts" / "deploy"), *args],
        cwd=repo.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def the_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("scripts/deploy: missing ")
    return lines[0]


NETWORK = "network access to " + ", ".join(deploy.HOSTS)


def machine(tmp_path: Path, node: str = "v22.12.0", uv: str | None = None) -> Path:
    """A PATH with node (and npm) saying `node`, and uv saying `uv` when given."""
    bin_dir = tmp_path / "bin"
    tool(bin_dir, "node", node)
    tool(bin_dir, "npm", "10.9.0")
    if uv is not None:
        tool(bin_dir, "uv", uv)
    return bin_dir


def with_config(repo: Path, database_id: str) -> None:
    example = (repo / "wrangler.example.jsonc").read_text("utf-8")
    placeholder = "00000000-0000-0000-0000-000000000000"
    assert placeholder in example
    (repo / "wrangler.jsonc").write_text(example.replace(placeholder, database_id), "utf-8")


def test_check_on_a_node_20_machine_names_node_uv_network_and_the_config(
    checkout: Path, tmp_path: Path
) -> None:
    bin_dir = machine(tmp_path, node="v20.20.2")
    line = the_line(run(checkout, bin_dir, "--check"))
    assert "Node.js >= 22.12.0 (this is v20.20.2" in line
    assert "uv >= 0.13.4 (not installed" in line
    assert NETWORK in line
    assert "wrangler.jsonc (copy wrangler.example.jsonc" in line
    # Only the two version questions were asked; nothing was installed or created.
    assert (bin_dir / "ran.log").read_text("utf-8").split("\n")[:-1] == ["node --version"]
    assert sorted(p.name for p in checkout.iterdir()) == sorted(
        {name.split("/")[0] for name in COPIED}
    )


def test_with_node_uv_and_the_config_there_only_the_network_is_missing(
    checkout: Path, tmp_path: Path
) -> None:
    bin_dir = machine(tmp_path, uv="uv 0.13.9 (x86_64-unknown-linux-gnu)")
    with_config(checkout, REAL_ID)
    assert the_line(run(checkout, bin_dir, "--check")) == f"scripts/deploy: missing {NETWORK}"


def test_the_deploy_itself_stops_at_the_same_line_before_installing_anything(
    checkout: Path, tmp_path: Path
) -> None:
    bin_dir = machine(tmp_path)
    with_config(checkout, REAL_ID)
    # uv is not asked for: the deploy installs the pinned one once the network is there.
    assert the_line(run(checkout, bin_dir)) == f"scripts/deploy: missing {NETWORK}"
    assert "npm ci" not in (bin_dir / "ran.log").read_text("utf-8")
    assert not (checkout / ".venv").exists()
    assert not (checkout / "node_modules").exists()


@pytest.mark.parametrize(
    ("node", "uv", "expected"),
    [
        (
            "v22.11.0",
            "uv 0.13.9",
            "Node.js >= 22.12.0 (this is v22.11.0, which the pinned wrangler refuses)",
        ),
        ("v22.12.0", "uv 0.13.3 (x)", "uv >= 0.13.4 ({bin}/uv is 0.13.3)"),
    ],
)
def test_a_version_just_below_what_is_needed_is_named(
    checkout: Path, tmp_path: Path, node: str, uv: str, expected: str
) -> None:
    bin_dir = machine(tmp_path, node=node, uv=uv)
    with_config(checkout, REAL_ID)
    problems = the_line(run(checkout, bin_dir, "--check")).removeprefix("scripts/deploy: missing ")
    assert set(problems.split("; ")) == {expected.format(bin=bin_dir), NETWORK}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('"python_workers", "global_fetch_strictly_public"', '"python_workers"'),
            "global_fetch_strictly_public in wrangler.jsonc's compatibility_flags",
        ),
        (
            ('"ENVIRONMENT": "production",', '"ENVIRONMENT": "development",'),
            '"ENVIRONMENT": "production" in wrangler.jsonc\'s vars (it is "development")',
        ),
        (
            ('"ENVIRONMENT": "production",', ""),
            '"ENVIRONMENT": "production" in wrangler.jsonc\'s vars (it is not set)',
        ),
        # Issue 45, item 14: a plain-http origin deployed (no secure cookie, no HSTS).
        (
            ('"PUBLIC_ORIGIN": "https://', '"PUBLIC_ORIGIN": "http://'),
            'an https PUBLIC_ORIGIN in wrangler.jsonc\'s vars (it is "http://scheduling.example"',
        ),
    ],
)
def test_a_config_that_lost_the_public_fetch_flag_or_production_is_refused(
    checkout: Path, tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    """Issue 37, item 7: `--check` checked the D1 id only."""
    with_config(checkout, REAL_ID)
    config = checkout / "wrangler.jsonc"
    text = config.read_text("utf-8")
    assert change[0] in text
    config.write_text(text.replace(change[0], change[1]), "utf-8")
    bin_dir = machine(tmp_path, uv="uv 0.13.9 (x86_64-unknown-linux-gnu)")
    problems = the_line(run(checkout, bin_dir, "--check")).removeprefix("scripts/deploy: missing ")
    [problem] = [p for p in problems.split("; ") if p != NETWORK]
    assert problem.startswith(expected)


def test_the_example_config_as_copied_has_nothing_missing_but_its_id(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy2(ROOT / "wrangler.example.jsonc", repo / "wrangler.jsonc")
    shutil.copy2(ROOT / "wrangler.example.jsonc", repo / "wrangler.example.jsonc")
    [problem] = deploy.config_problems(repo / "wrangler.jsonc")
    assert problem.startswith("the D1 database id in wrangler.jsonc")
    with_config(repo, REAL_ID)
    assert deploy.config_problems(repo / "wrangler.jsonc") == []


def test_the_hosts_of_pywranglers_first_run_are_probed_and_the_unreachable_one_named() -> None:
    """Issue 37, item 7: on a first run pywrangler has uv download a CPython build and the
    Pyodide cross-build environment (GitHub release downloads, served from another host).
    Issue 45, item 21: uv's build comes from releases.astral.sh first; nothing of the deploy
    contacts pyodide.github.io."""
    for host in ("github.com", "release-assets.githubusercontent.com", "releases.astral.sh"):
        assert host in deploy.HOSTS
    assert "pyodide.github.io" not in deploy.HOSTS
    probed: list[str] = []

    def probe(urls: Iterable[str]) -> list[str]:
        probed.extend(urls)
        return [url for url in probed if "githubusercontent" in url]

    problem = deploy.network_problem(probe=probe)
    assert problem == "network access to release-assets.githubusercontent.com"
    assert probed == [f"https://{host}/" for host in deploy.HOSTS]
    assert deploy.network_problem(probe=lambda urls: []) is None


def test_an_old_python_is_named_before_anything_runs(checkout: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [BASH, str(checkout / "scripts" / "deploy"), "--check"],
        env={"PATH": "/usr/bin:/bin", "PYTHON": "/bin/false"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert the_line(result) == (
        "scripts/deploy: missing Python >= 3.11 as /bin/false (pywrangler needs it)"
    )


class _Answering(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(404)  # any answer means the host is reachable
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def answering_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_host_that_answers_anything_is_reachable_and_a_closed_port_is_not(
    answering_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    closed = f"http://127.0.0.1:{free_port()}/"
    assert deploy.unreachable([answering_url, closed], timeout_s=5) == [closed]


def test_once_nothing_is_missing_it_installs_the_pinned_tools_migrates_and_deploys(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps after the check, in order, each tool the pinned one (the commands are
    recorded, not run: the network and Cloudflare are not there)."""
    venv = checkout / ".venv"
    with_config(checkout, REAL_ID)
    monkeypatch.setattr(deploy, "ROOT", checkout)
    monkeypatch.setattr(deploy, "VENV", venv)
    monkeypatch.setattr(deploy, "DEPLOY_LOCK", checkout / "requirements" / "deploy.txt")
    monkeypatch.setattr(deploy, "WRANGLER_CONFIG", checkout / "wrangler.jsonc")
    monkeypatch.setattr(deploy, "missing", lambda *, check_uv: [])
    monkeypatch.setattr(deploy, "remote_migrations", lambda name, env: [])  # a new database
    ran: list[tuple[list[str], str]] = []

    def run(command: list[str], env: dict[str, str] | None = None) -> None:
        ran.append((list(command), (env or {}).get("PATH", "")))
        if command[1:3] == ["-m", "venv"]:
            (venv / "bin").mkdir(parents=True)
            (venv / "bin" / "python").touch()
        if "--require-hashes" in command:
            tool(venv / "bin", "uv", "uv 0.13.9 (x86_64-unknown-linux-gnu)")
        if command[:2] == ["npm", "ci"]:
            (checkout / "node_modules").mkdir()

    monkeypatch.setattr(deploy, "_run", run)
    assert deploy.main([]) == 0
    commands = [command for command, _ in ran]
    assert commands == [
        ["npm", "ci", "--no-audit", "--no-fund"],
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--require-hashes", "--only-binary=:all:", "-r",
         str(checkout / "requirements" / "deploy.txt")],
        ["npx", "wrangler", "d1", "migrations", "apply", "dee-wan-scheduling", "--remote"],
        [str(venv / "bin" / "pywrangler"), "deploy"],
    ]  # fmt: skip
    # pywrangler finds the pinned uv and, through `npx`, the pinned wrangler first.
    path = ran[-1][1].split(":")
    assert path[:2] == [str(venv / "bin"), str(checkout / "node_modules" / ".bin")]
    # A second deploy installs nothing again: both locks are as installed.
    ran.clear()
    assert deploy.main([]) == 0
    assert [command[:2] for command, _ in ran] == [
        ["npx", "wrangler"],
        [str(venv / "bin" / "pywrangler"), "deploy"],
    ]
