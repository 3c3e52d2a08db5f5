"""A local Dee Wan next to the plugin: two real processes on loopback, the plugin installed.

Used by `scripts/dev` (a person clicking around) and by the browser tests.
The plugin runs with `python -m scheduling serve` on SQLite; this fake core
runs with `python -m fake_core --seed demo`.

The plugin's secrets live in a `.dev.vars` file (the one `wrangler dev` reads):
the repo root's by default, or `<state_dir>/.dev.vars`. It is made once, with
fresh random secrets, when it is missing, and never rewritten. The variables
that depend on the ports are given to the plugin through its environment,
which wins over the file.
"""

from __future__ import annotations

import base64
import errno
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scheduling.runtimes.cpython.dev_vars import load_vars

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = ROOT / ".wrangler" / "dev"
DEFAULT_VARS = ROOT / ".dev.vars"
HOW_TO_FIX = {
    "ADMIN_SECRET": "16 characters or more",
    "TOKEN_KEY": "base64 of 32 random bytes, e.g. `openssl rand -base64 32`",
}


class DevStackError(Exception):
    """The stack cannot start. The message is for a person and never carries a secret."""


class PortInUse(DevStackError):
    """A port the stack needs cannot be bound."""


@dataclass
class DevStack:
    plugin_port: int = 8788
    core_port: int = 8787
    # None: the SQLite file under .wrangler/dev/ and the repo root's .dev.vars.
    # A folder: both in it.
    state_dir: Path | None = None
    cron: bool = True
    quiet: bool = False
    admin_secret: str = field(default="", repr=False)
    vars_created: bool = False
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    installation: dict[str, Any] = field(default_factory=dict)

    @property
    def plugin_origin(self) -> str:
        return f"http://localhost:{self.plugin_port}"

    @property
    def core_origin(self) -> str:
        return f"http://localhost:{self.core_port}"

    @property
    def db_path(self) -> Path:
        return (self.state_dir or DEFAULT_STATE_DIR) / "plugin.sqlite3"

    @property
    def vars_path(self) -> Path:
        return self.state_dir / ".dev.vars" if self.state_dir else DEFAULT_VARS

    def ensure_vars(self) -> bool:
        """Write `.dev.vars` with fresh secrets (mode 0600) if it is missing. True if written."""
        path = self.vars_path
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = {
            "ENVIRONMENT": "development",
            "PUBLIC_ORIGIN": self.plugin_origin,
            "DEE_WAN_DEV_ORIGINS": self.core_origin,
            "ADMIN_SECRET": secrets.token_urlsafe(32),
            "TOKEN_KEY": base64.b64encode(os.urandom(32)).decode(),
        }
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write("".join(f"{k}={v}\n" for k, v in lines.items()))
        return True

    def read_admin_secret(self) -> str:
        """ADMIN_SECRET as the plugin will see it (the environment wins over the file)."""
        path = self.vars_path
        try:
            values = load_vars(path, os.environ)
        except OSError as exc:
            raise DevStackError(f"cannot read {path}: {exc.strerror}") from None
        except ValueError as exc:  # "line N: expected KEY=VALUE", never a value
            raise DevStackError(f"{path}: {exc}") from None
        for name, fix in HOW_TO_FIX.items():
            if not values.get(name):
                raise DevStackError(
                    f"{name} is missing from {path}: add it ({fix}), "
                    "or delete the file to have a new one made with fresh secrets"
                )
        return values["ADMIN_SECRET"]

    def start(self) -> DevStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if self.plugin_port == self.core_port:
            raise DevStackError(
                f"the plugin and the local Dee Wan cannot share port {self.core_port}"
            )
        _check_free(self.core_port, "the local Dee Wan")
        _check_free(self.plugin_port, "the plugin")
        self.vars_created = self.ensure_vars()
        self.admin_secret = self.read_admin_secret()
        self.db_path.parent.mkdir(parents=True, exist_ok=True)

        output = subprocess.DEVNULL if self.quiet else None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        plugin_env = {
            **env,
            "ENVIRONMENT": "development",
            "PUBLIC_ORIGIN": self.plugin_origin,
            "DEE_WAN_DEV_ORIGINS": self.core_origin,
        }
        # The core's home page can then mint rotation codes for its rotate buttons.
        core_env = {**env, "FAKE_CORE_PLUGIN_ADMIN_SECRET": self.admin_secret}
        plugin = [sys.executable, "-m", "scheduling", "serve", "--port", str(self.plugin_port),
                  "--db", str(self.db_path), "--vars", str(self.vars_path)]  # fmt: skip
        if not self.cron:
            plugin.append("--no-cron")
        core = [sys.executable, "-m", "fake_core", "--port", str(self.core_port),
                "--plugin-origin", self.plugin_origin, "--seed", "demo"]  # fmt: skip
        for command, command_env in ((plugin, plugin_env), (core, core_env)):
            self.processes.append(
                # This interpreter with fixed arguments: nothing untrusted reaches the command.
                subprocess.Popen(command, cwd=ROOT, env=command_env, stdout=output, stderr=output)  # noqa: S603
            )
        self._wait(f"{self.plugin_origin}/dee-wan/manifest.json")
        self._wait(f"{self.core_origin}/__fake/state")

    def install(self) -> dict[str, Any]:
        """Mint an activation code as the operator and hand it to the local Dee Wan."""
        try:
            minted = httpx.post(
                f"{self.plugin_origin}/admin/activation-codes",
                headers={"authorization": f"Bearer {self.admin_secret}"},
                timeout=10,
            )
            if minted.status_code != 201:
                raise DevStackError(
                    f"the plugin refused to mint an activation code: {_answer(minted)} "
                    f"(is ADMIN_SECRET in {self.vars_path} right?)"
                )
            answer = httpx.post(
                f"{self.core_origin}/__fake/install",
                json={"code": minted.json()["code"]},
                timeout=10,
            )
        except httpx.HTTPError as exc:
            raise DevStackError(f"installing the plugin failed: {exc}") from None
        if answer.status_code != 201:
            raise DevStackError(
                f"the local Dee Wan could not install the plugin: {_answer(answer)}"
            )
        self.installation = answer.json()["installation"]
        return self.installation

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def exited(self) -> str | None:
        """Which process has ended, if one has."""
        for name, process in zip(("the plugin", "the local Dee Wan"), self.processes, strict=False):
            if process.poll() is not None:
                return f"{name} exited with status {process.returncode}"
        return None

    def _wait(self, url: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ended = self.exited()
            if ended:
                raise DevStackError(f"{ended} during start-up (its messages are above)")
            try:
                httpx.get(url, timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise DevStackError(f"{url} did not answer within 30 s")

    def __enter__(self) -> DevStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _check_free(port: int, who: str) -> None:
    """Bind the port as the servers will (127.0.0.1, SO_REUSEADDR); refuse if that fails."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            reason = (
                "is already in use"
                if exc.errno == errno.EADDRINUSE
                else f"cannot be used ({exc.strerror})"
            )
            raise PortInUse(f"port {port} {reason}, so {who} cannot start there") from None


def _answer(response: httpx.Response) -> str:
    """`HTTP 401 plugin_unauthorized`, plus the fake core's reason when it gives one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    words = [f"HTTP {response.status_code}"]
    if isinstance(body, dict):
        words += [str(body[k]) for k in ("code", "reason") if body.get(k)]
    return " ".join(words)
