"""Start and drive the Pyodide harness (serve.mjs) and a fake core from pytest.

One harness process per test session (`shared_harness()`): Pyodide starts once.
Tests talk to the Worker over HTTP exactly as to a deployed Worker, and use the
`/__harness/*` control routes for cron ticks, D1 assertions and crypto.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

from scheduling.ports import OutboundRequest
from scripts.wrangler_config import read_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SERVE = HERE / "serve.mjs"
STARTUP = HERE / "startup.mjs"
SETUP = HERE / "setup.sh"
WRANGLER_EXAMPLE = ROOT / "wrangler.example.jsonc"

START_TIMEOUT_S = 120.0
# workerd's cap: fetches of one invocation waiting for response headers at once.
MAX_CONNECTIONS = 6

ADMIN_SECRET = "harness-operator-secret-0123456789"
# The same key as tests/support/app.py's TOKEN_KEY.
TOKEN_KEY = "tqtyhnge1KBB4dUQNHow17D034FAcVb022dQEcr3cWg="


def node_path() -> str | None:
    return shutil.which("node")


def ensure_installed() -> None:
    """Run setup.sh: a no-op in well under a second when CI already ran it, else it installs."""
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(SETUP)],  # noqa: S607
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{SETUP} failed:\n{result.stdout}\n{result.stderr}")


def example_vars() -> dict[str, Any]:
    """The `vars` of wrangler.example.jsonc, typed as wrangler would hand them to the Worker."""
    variables = read_config(WRANGLER_EXAMPLE).get("vars", {})
    assert isinstance(variables, dict)
    return dict(variables)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert isinstance(port, int)
        return port


def _read_first_line(stream: IO[str], timeout_s: float) -> str | None:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return box[0] if box else None


class Harness:
    """A running serve.mjs: the real Worker entry under Pyodide, with Miniflare's D1."""

    def __init__(
        self, workdir: Path, *, max_connections: int = MAX_CONNECTIONS, port: int | None = None
    ) -> None:
        """A new harness process (a fresh isolate) on `workdir`'s D1 state; `port` (free
        now) keeps an earlier harness's origin, so its sessions and installs carry on."""
        self.workdir = workdir
        self.port = port or free_port()
        self.origin = f"http://localhost:{self.port}"
        self.control_url = f"http://127.0.0.1:{self.port}"
        self.max_connections = max_connections
        self.log_path = workdir / "harness.log"
        self.base_vars: dict[str, Any] = {
            **example_vars(),
            "PUBLIC_ORIGIN": self.origin,
            "ADMIN_SECRET": ADMIN_SECRET,
            "TOKEN_KEY": TOKEN_KEY,
        }
        vars_file = workdir / "vars.json"
        vars_file.write_text(json.dumps(self.base_vars), "utf-8")
        self._log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                node_path() or "node",
                str(SERVE),
                "--port",
                str(self.port),
                "--vars",
                str(vars_file),
                "--persist",
                str(workdir / "state"),
                "--max-connections",
                str(max_connections),
                *self._compat_flags_option(),
            ],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.process.stdout is not None
        line = _read_first_line(self.process.stdout, START_TIMEOUT_S)
        if not line:
            log = self.log_tail()  # before close() shuts the log file
            self.close()
            raise RuntimeError(f"harness did not start in {START_TIMEOUT_S:.0f} s; its log:\n{log}")
        self.ready: dict[str, Any] = json.loads(line)
        self.control = httpx.Client(base_url=self.control_url, timeout=60)

    @staticmethod
    def _compat_flags_option() -> list[str]:
        """PYODIDE_HARNESS_COMPAT_FLAGS=a,b overrides the flags `_cloudflare_compat_flags` answers
        true for ("" for none); unset, serve.mjs uses those on at the example's date."""
        flags = os.environ.get("PYODIDE_HARNESS_COMPAT_FLAGS")
        return [] if flags is None else ["--compat-flags", flags]

    # -- the Worker, as a browser or core would see it -----------------------

    def client(self, **kwargs: Any) -> httpx.Client:
        """An HTTP client for the Worker at its PUBLIC_ORIGIN (http://localhost:<port>)."""
        kwargs.setdefault("timeout", 60)
        return httpx.Client(base_url=self.origin, **kwargs)

    # -- control routes --------------------------------------------------------

    def _post(self, route: str, payload: Any = None, **params: Any) -> Any:
        response = self.control.post(f"/__harness/{route}", json=payload, params=params)
        if response.status_code != 200:
            raise AssertionError(
                f"/__harness/{route}: {response.status_code} {response.text}\n{self.log_tail()}"
            )
        return response.json()

    def scheduled(self, time_ms: int, *, timeout_s: float = 60) -> dict[str, Any]:
        """Run the entry's scheduled() at controller.scheduledTime = time_ms; returns when done."""
        response = self.control.post(
            "/__harness/scheduled", params={"time": time_ms}, timeout=timeout_s
        )
        if response.status_code != 200:
            raise AssertionError(f"/__harness/scheduled: {response.status_code} {response.text}")
        result: dict[str, Any] = response.json()
        return result

    def sql(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """A read-only query on the Worker's D1 (through Miniflare's binding)."""
        rows: list[dict[str, Any]] = self._post("sql", {"sql": sql, "params": list(params)})[
            "results"
        ]
        return rows

    def execute(self, *statements: tuple[str, list[Any]]) -> list[int]:
        """Seed D1 for a test: statements in one batch; returns each one's changes."""
        payload = {"statements": [{"sql": sql, "params": params} for sql, params in statements]}
        changes: list[int] = self._post("exec", payload)["changes"]
        return changes

    def seal(self, plaintext: str, context: str, key: str = TOKEN_KEY) -> str:
        """Seal with scheduling.runtimes.workers.adapters.WebCrypto inside Pyodide."""
        sealed: str = self._post(
            "crypto/seal", {"key": key, "plaintext": plaintext, "context": context}
        )["sealed"]
        return sealed

    def open(self, sealed: str, context: str, key: str = TOKEN_KEY) -> dict[str, str]:
        """{"plaintext": …} or {"error": "UnreadableSecret"}, from WebCrypto inside Pyodide."""
        answer: dict[str, str] = self._post(
            "crypto/open", {"key": key, "sealed": sealed, "context": context}
        )
        return answer

    def sha256_hex(self, value: str, key: str = TOKEN_KEY) -> str:
        digest: str = self._post("crypto/sha256", {"key": key, "value": value})["hex"]
        return digest

    def hmac_sha256(self, key: bytes, message: bytes) -> bytes:
        """HMAC-SHA256 with scheduling.runtimes.workers.adapters.WebCrypto inside Pyodide."""
        payload = {"key": TOKEN_KEY, "hmac_key_hex": key.hex(), "message_hex": message.hex()}
        digest: str = self._post("crypto/hmac", payload)["hex"]
        return bytes.fromhex(digest)

    def info(self) -> dict[str, Any]:
        result: dict[str, Any] = self._post("info")
        return result

    def fetch_stats(self, *, reset: bool = False) -> dict[str, int]:
        """The Worker's outbound fetch counters (see serve.mjs `newFetchStats`), as they were
        before `reset` zeroes the totals and maxima."""
        stats: dict[str, int] = self._post("fetch-stats", {"reset": reset})
        return stats

    def invocations(self, *, reset: bool = False) -> list[dict[str, Any]]:
        """Each invocation since the last reset, oldest first: `handler` (fetch or
        scheduled), `cpu_ms` (the harness process's CPU time over it) and `wall_ms`."""
        answer: dict[str, list[dict[str, Any]]] = self._post("invocations", {"reset": reset})
        return answer["invocations"]

    def send_all(self, requests: Sequence[OutboundRequest]) -> list[dict[str, Any]]:
        """Send every request at once from one invocation, through WorkersFetch inside Pyodide.

        Each outcome is {"status", "body", "truncated", "elapsed_ms"} or {"error":
        "TransportTimeout" | "TransportError", "detail", "elapsed_ms"}, in the order of
        `requests`.
        """
        payload = {
            "requests": [
                {
                    "method": request.method,
                    "url": request.url,
                    "headers": dict(request.headers),
                    "body": None if request.body is None else request.body.decode(),
                    "timeout_s": request.timeout_s,
                    "max_body_bytes": request.max_body_bytes,
                }
                for request in requests
            ]
        }
        outcomes: list[dict[str, Any]] = self._post("send", payload)["outcomes"]
        return outcomes

    def d1(self, op: str, *statements: tuple[str, Sequence[Any]]) -> dict[str, Any]:
        """One Database-port call (all/first/run/batch) through the Workers D1 adapter.

        See harness_glue.d1 for the answer's shape; tests/pyodide_harness/remote_d1.py wraps
        this route as a `scheduling.ports.Database`.
        """
        payload = {
            "op": op,
            "statements": [{"sql": sql, "params": list(params)} for sql, params in statements],
        }
        answer: dict[str, Any] = self._post("d1", payload)
        return answer

    def rate_limiter(self, **change: Any) -> dict[str, Any]:
        """The Worker's LAUNCH_LIMITER stand-in (serve.mjs `Ratelimit`): `limit=N[, period=60]`
        binds a fresh one, `limit=None` removes it, `reset=True` ends its window; no
        argument only reads. Answers {"bound": bool, "calls": [{"key", "success"}]}."""
        answer: dict[str, Any] = self._post("ratelimit", change)
        return answer

    @contextlib.contextmanager
    def launch_limiter(self, limit: int, period: int = 60) -> Iterator[None]:
        """Run with a Rate Limiting binding of `limit` per window bound as LAUNCH_LIMITER."""
        self.rate_limiter(limit=limit, period=period)
        try:
            yield
        finally:
            self.rate_limiter(limit=None)

    def clock(self, **change: Any) -> dict[str, Any]:
        """The Worker's SCHEDULE_CLOCK stand-in (serve.mjs `ClockHost`): `bind={settings}`
        binds a fresh namespace, `bind=None` removes it, `drop=[names]` / `twice=[names]` drop
        or double each named object's next alarm, `tell=[installations]` tells their clocks
        as a create does after its write, `wait=True` answers once no alarm runs or is due;
        no argument only reads. Answers `objects` (each one's `alarm` and `stored`),
        `calls`, `dropped` and `alarms`: every alarm() run, with its `name`, `set_for`,
        `started`, `ended`, the `d1` queries and `subrequests` it used, and whether it
        `threw`."""
        answer: dict[str, Any] = self._post("clock", change)
        return answer

    @contextlib.contextmanager
    def bound_clock(self, **settings: Any) -> Iterator[None]:
        """Run with SCHEDULE_CLOCK bound: a Durable Object of the entry's `ScheduleClock` per
        installation (settings: `retry_scale` shrinks the retries of a throwing alarm)."""
        self.clock(bind=settings)
        try:
            yield
        finally:
            self.clock(bind=None)

    @contextlib.contextmanager
    def limits(self, *, d1: int | None = None, subrequests: int | None = None) -> Iterator[None]:
        """Run with each invocation refused past `d1` D1 queries (each statement of a batch
        counts) or `subrequests` fetches, with workerd's texts."""
        self._post("limits", {"d1": d1, "subrequests": subrequests})
        try:
            yield
        finally:
            self._post("limits", {"d1": None, "subrequests": None})

    def set_vars(self, variables: dict[str, Any]) -> None:
        """Replace the Worker's variables and secrets (the D1 binding stays)."""
        self._post("vars", variables)

    @contextlib.contextmanager
    def vars(self, **overrides: Any) -> Iterator[dict[str, Any]]:
        """Run with some variables changed (None removes one); restores the base set after."""
        changed = {**self.base_vars, **overrides}
        changed = {name: value for name, value in changed.items() if value is not None}
        self.set_vars(changed)
        try:
            yield changed
        finally:
            self.set_vars(self.base_vars)

    # -- lifecycle -------------------------------------------------------------

    def events(self, name: str) -> list[dict[str, Any]]:
        """The Worker's JSON log lines of event `name` so far (`runner_tick`, `runner_alarm`)."""
        self._log.flush()
        text = self.log_path.read_text("utf-8", errors="replace")
        prefix = f'[worker] {{"event":"{name}"'
        return [
            json.loads(line[len("[worker] ") :])
            for line in text.splitlines()
            if line.startswith(prefix)
        ]

    def log_tail(self, lines: int = 60) -> str:
        self._log.flush()
        text = self.log_path.read_text("utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def close(self) -> None:
        if getattr(self, "control", None) is not None:
            self.control.close()
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # serve.mjs leaves when its stdin closes
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


class FakeCoreProcess:
    """`python -m fake_core` on loopback, its plugin origin set to the harness's."""

    def __init__(self, plugin_origin: str, log_path: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://localhost:{self.port}"
        self._log = log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fake_core",
                "--port",
                str(self.port),
                "--plugin-origin",
                plugin_origin,
                "--base-url",
                self.base_url,
            ],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.process.stdout is not None
        if not _read_first_line(self.process.stdout, 30):
            self.close()
            raise RuntimeError(f"fake_core did not start; see {log_path}")
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    def control(self, method: str, name: str, body: Any = None, **params: Any) -> Any:
        response = self.client.request(method, f"/__fake/{name}", json=body, params=params)
        data = response.json()
        if response.status_code >= 300:
            raise AssertionError(f"/__fake/{name}: {response.status_code} {data}")
        return data

    def close(self) -> None:
        if getattr(self, "client", None) is not None:
            self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


def import_probe(
    module: str = "entry",
    *,
    draws: bool = False,
    src: Path | None = None,
    preload: str = "",
    wheels: Path | None = None,
) -> dict[str, Any]:
    """Import `module` (or several, separated by commas) of the Worker in a fresh Pyodide, as
    workerd does before its snapshot (startup.mjs): `import_ms`, `import_cpu_ms`, `modules`;
    with `draws`, also `allowed`, `violations` (random draws by module, see
    startup_probe.py), `loaded`, `slowest_cpu_ms` and `cpu_ms_by_package`. `preload` is
    imported first and counted in none of them (`"workerd"`: workerd's own imports);
    `wheels`, a dir of more wheels to install (another program's, with `src`)."""
    ensure_installed()
    command = [node_path() or "node", str(STARTUP), "--module", module]
    command += ["--draws"] if draws else []
    command += ["--src", str(src)] if src is not None else []
    command += ["--preload", preload] if preload else []
    command += ["--wheels", str(wheels)] if wheels is not None else []
    result = subprocess.run(
        command, cwd=HERE, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"startup.mjs failed:\n{result.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


_shared: Harness | None = None


def shared_harness() -> Harness:
    """The session's one harness, started on first use and stopped at exit.

    Its work dir (D1 state, harness.log, fake_core.log) is removed at exit unless
    PYODIDE_HARNESS_KEEP=1, in which case its path is printed.
    """
    global _shared
    if _shared is None:
        ensure_installed()
        workdir = Path(tempfile.mkdtemp(prefix="pyodide-harness-"))
        _shared = Harness(workdir)
        atexit.register(_stop, _shared)
    return _shared


def _stop(harness: Harness) -> None:
    harness.close()
    if os.environ.get("PYODIDE_HARNESS_KEEP") == "1":
        print(f"pyodide harness work dir kept: {harness.workdir}", file=sys.stderr)
    else:
        shutil.rmtree(harness.workdir, ignore_errors=True)
