"""A local Dee Wan next to the plugin: two real processes on loopback, the plugin installed.

Used by `scripts/dev` (a person clicking around) and by the browser tests.
The plugin runs with `python -m scheduling serve` on SQLite; this fake core
runs with `python -m fake_core --seed demo`.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class DevStack:
    plugin_port: int = 8788
    core_port: int = 8787
    state_dir: Path = ROOT / ".wrangler" / "dev"
    cron: bool = True
    quiet: bool = False
    admin_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    installation: dict[str, Any] = field(default_factory=dict)

    @property
    def plugin_origin(self) -> str:
        return f"http://localhost:{self.plugin_port}"

    @property
    def core_origin(self) -> str:
        return f"http://localhost:{self.core_port}"

    def vars_file(self) -> Path:
        """The plugin's `.dev.vars`; secrets are made fresh once and kept."""
        path = self.state_dir / ".dev.vars"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if path.exists():
            values = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
            self.admin_secret = values.get("ADMIN_SECRET", self.admin_secret)
        token_key = base64.b64encode(os.urandom(32)).decode()
        lines = {
            "ENVIRONMENT": "development",
            "PUBLIC_ORIGIN": self.plugin_origin,
            "DEE_WAN_DEV_ORIGINS": self.core_origin,
            "ADMIN_SECRET": self.admin_secret,
            "TOKEN_KEY": token_key,
        }
        if path.exists():
            lines.update({k: v for k, v in values.items() if k in ("TOKEN_KEY",)})
        path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        path.chmod(0o600)
        return path

    def start(self) -> DevStack:
        output = subprocess.DEVNULL if self.quiet else None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        plugin = [sys.executable, "-m", "scheduling", "serve", "--port", str(self.plugin_port),
                  "--db", str(self.state_dir / "plugin.sqlite3"), "--vars", str(self.vars_file())]
        if not self.cron:
            plugin.append("--no-cron")
        core = [sys.executable, "-m", "fake_core", "--port", str(self.core_port),
                "--plugin-origin", self.plugin_origin, "--seed", "demo"]
        for command in (plugin, core):
            self.processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output))
        self._wait(f"{self.plugin_origin}/dee-wan/manifest.json")
        self._wait(f"{self.core_origin}/__fake/state")
        return self

    def install(self) -> dict[str, Any]:
        """Mint an activation code as the operator and hand it to the local Dee Wan."""
        minted = httpx.post(f"{self.plugin_origin}/admin/activation-codes",
                            headers={"authorization": f"Bearer {self.admin_secret}"}, timeout=10)
        minted.raise_for_status()
        answer = httpx.post(f"{self.core_origin}/__fake/install",
                            json={"code": minted.json()["code"]}, timeout=10)
        answer.raise_for_status()
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
        self.processes.clear()

    def _wait(self, url: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                self.stop()
                raise RuntimeError("a process of the local stack exited during start-up")
            try:
                httpx.get(url, timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{url} did not come up")

    def __enter__(self) -> DevStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
