"""Two real processes on loopback: the plugin and a local Dee Wan, the plugin installed.

The plugin runs with `python -m scheduling serve` on SQLite; the local Dee
Wan with `python -m fake_core --seed demo --state <state dir>/fake_core.json`.
Both keep their state in the state dir, so the next start carries on where
this one stopped (see `installation`). The plugin's secrets are in
`.dev.vars` (see `vars_file`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scripts.devstack.errors import DevStackError, PortInUse
from scripts.devstack.installation import Origins, connect
from scripts.devstack.vars_file import dev_origins, ensure_vars, read_admin_secret

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STATE_DIR = ROOT / ".wrangler" / "dev"
DEFAULT_VARS = ROOT / ".dev.vars"


@dataclass
class DevStack:
    plugin_port: int = 8788
    core_port: int = 8787
    # None: the plugin's database and the local Dee Wan's state under .wrangler/dev/, and
    # the repo root's .dev.vars. A folder: all three in it.
    state_dir: Path | None = None
    cron: bool = True
    quiet: bool = False
    # Variables for the plugin beyond its .dev.vars (the environment overrides the file).
    plugin_vars: dict[str, str] = field(default_factory=dict)
    admin_secret: str = field(default="", repr=False)
    vars_created: bool = False
    # Wraps each spawn: `scripts/dev` holds a stop signal back until the new process is on
    # `processes`, so `stop` ends it with the rest.
    spawning: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    installation: dict[str, Any] = field(default_factory=dict)
    reused: bool = False  # the installation is the last run's
    replaced: str | None = None  # the last run's, which the plugin no longer held
    retired: tuple[str, ...] = ()  # installations for other ports, uninstalled, in words
    rotated: str | None = None  # why the token was rotated, when it had to be

    @property
    def plugin_origin(self) -> str:
        return f"http://localhost:{self.plugin_port}"

    @property
    def core_origin(self) -> str:
        return f"http://localhost:{self.core_port}"

    @property
    def tick_url(self) -> str:
        """The plugin's development trigger for one tick now (`wrangler dev --test-scheduled`)."""
        return f"{self.plugin_origin}/__scheduled?cron=*+*+*+*+*"

    @property
    def db_path(self) -> Path:
        return (self.state_dir or DEFAULT_STATE_DIR) / "plugin.sqlite3"

    @property
    def core_state_path(self) -> Path:
        return (self.state_dir or DEFAULT_STATE_DIR) / "fake_core.json"

    @property
    def vars_path(self) -> Path:
        return self.state_dir / ".dev.vars" if self.state_dir else DEFAULT_VARS

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
        self.vars_created = ensure_vars(self.vars_path, self.plugin_origin, self.core_origin)
        self.admin_secret = read_admin_secret(self.vars_path)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)

        output = subprocess.DEVNULL if self.quiet else None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        plugin_env = {**env, **self.plugin_variables()}
        # The core's home page can then mint rotation codes for its rotate buttons. Its
        # "Run the tick now" calls the plugin's development trigger (--plugin-tick-url).
        core_env = {**env, "FAKE_CORE_PLUGIN_ADMIN_SECRET": self.admin_secret}
        plugin = [sys.executable, "-m", "scheduling", "serve", "--port", str(self.plugin_port),
                  "--db", str(self.db_path), "--vars", str(self.vars_path)]  # fmt: skip
        if not self.cron:
            plugin.append("--no-cron")
        core = [sys.executable, "-m", "fake_core", "--port", str(self.core_port),
                "--plugin-origin", self.plugin_origin, "--seed", "demo",
                "--state", str(self.core_state_path),
                "--plugin-tick-url", self.tick_url]  # fmt: skip
        for command, command_env in ((plugin, plugin_env), (core, core_env)):
            with self.spawning():
                # This interpreter with fixed arguments: nothing untrusted reaches the command.
                process = subprocess.Popen(  # noqa: S603
                    command, cwd=ROOT, env=command_env, stdout=output, stderr=output
                )
                self.processes.append(process)
        self._wait(f"{self.plugin_origin}/dee-wan/manifest.json")
        self._wait(f"{self.core_origin}/__fake/state")

    def plugin_variables(self) -> dict[str, str]:
        """What the plugin is given beyond its vars file (the environment wins over it): its
        origin, development, and the local Dee Wan's origin beside those the file lists."""
        return {
            "ENVIRONMENT": "development",
            "PUBLIC_ORIGIN": self.plugin_origin,
            "DEE_WAN_DEV_ORIGINS": dev_origins(self.vars_path, self.core_origin),
            **self.plugin_vars,
        }

    def install(self) -> dict[str, Any]:
        """The last run's installation when both sides still hold it, else a new one."""
        vars_hint = str(self.vars_path)
        origins = Origins(self.plugin_origin, self.core_origin, self.admin_secret, vars_hint)
        connected = connect(origins)
        self.installation = connected.installation
        self.reused, self.replaced = connected.reused, connected.replaced
        self.retired, self.rotated = connected.retired, connected.rotated
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
