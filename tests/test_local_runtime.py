"""`python -m scheduling serve …` as a newcomer runs it: a real process on a real port."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from scheduling.config import Configuration
from scheduling.runtimes.cpython.server import banner, origin_port_warning
from tests.support.app import ADMIN_SECRET, TOKEN_KEY
from tests.support.serve_process import free_port, wait_until_up, write_vars


def clean_env(**overrides: str) -> dict[str, str]:
    """This process's environment without the plugin's variables, then `overrides`."""
    env = dict(os.environ)
    for name in ("PUBLIC_ORIGIN", "TOKEN_KEY", "ADMIN_SECRET", "ENVIRONMENT"):
        env.pop(name, None)
    return {**env, **overrides}


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_serve_outlives_its_test() -> Iterator[None]:
    """Every `serve` a test starts has ended when the test ends; one left running is killed
    and fails the test."""
    yield
    left = []
    for process in _started:
        try:
            process.wait(10)  # a test may have signalled it a moment ago
        except subprocess.TimeoutExpired:
            left.append(process)
            process.kill()
            process.wait(10)
    _started.clear()
    assert not left, f"serve processes left running: {[p.args for p in left]}"


def serve(
    tmp_path: Path,
    vars_file: Path,
    port: int,
    *extra: str,
    env: dict[str, str] | None = None,
    umask: int = -1,
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduling",
            "serve",
            "--port",
            str(port),
            "--db",
            str(tmp_path / "plugin.sqlite3"),
            "--vars",
            str(vars_file),
            *extra,
        ],
        env=clean_env() if env is None else env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        umask=umask,
    )
    _started.append(process)
    return process


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    port = free_port()
    vars_file = write_vars(
        tmp_path / ".dev.vars",
        ENVIRONMENT="development",
        PUBLIC_ORIGIN="http://localhost:8788",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )
    process = serve(tmp_path, vars_file, port, "--no-cron")
    try:
        wait_until_up(port, process)
        yield port, tmp_path
    finally:
        process.terminate()
        process.wait(10)


def test_serves_manifest_with_origin_from_vars(running: tuple[int, Path]) -> None:
    port, tmp_path = running
    body = httpx.get(f"http://127.0.0.1:{port}/dee-wan/manifest.json").json()
    assert body["origin"] == "http://localhost:8788"
    assert (tmp_path / "plugin.sqlite3").exists()


def next_minute_ms() -> int:
    """A tick instant ahead of the wall clock that `/__scheduled` accepts (a few minutes at
    most): the tick runs at exactly that instant."""
    return (int(time.time()) // 60 + 1) * 60_000


def rfc3339(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def test_scheduled_trigger_runs_one_tick_in_development(running: tuple[int, Path]) -> None:
    port, _ = running
    answer = httpx.get(
        f"http://127.0.0.1:{port}/__scheduled",
        params={"cron": "* * * * *", "time": str(next_minute_ms())},
    )
    assert answer.status_code == 200
    assert answer.json()["code"] == "tick_finished"
    assert answer.json()["report"]["due"] == 0


def raw_get(port: int, target: bytes, host: bytes, headers: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + headers
            + b"Connection: close\r\n\r\n"
        )  # fmt: skip
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_routes_on_the_path_sent_never_on_host(running: tuple[int, Path]) -> None:
    port, _ = running
    answer = raw_get(port, b"/dee-wan/manifest.json", b"x/admin/status#")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b'"manifest_version":1' in answer
    assert b"runner_status" not in answer
    assert raw_get(port, b"/dee-wan%2Fmanifest.json", b"localhost").startswith(b"HTTP/1.1 404 ")
    refused = httpx.put(f"http://127.0.0.1:{port}/__scheduled")
    assert (refused.status_code, refused.headers["allow"]) == (405, "GET, POST")


def test_a_rebound_name_cannot_run_a_tick_on_the_real_server(running: tuple[int, Path]) -> None:
    """DNS rebinding: a page on rebind.example, whose name now resolves to 127.0.0.1, sends a
    same-origin request; only the Host it carries tells it apart from the developer's own."""
    port, _ = running
    target = b"/__scheduled?cron=*+*+*+*+*"
    rebound = raw_get(port, target, b"rebind.example:%d" % port, b"Sec-Fetch-Site: same-origin\r\n")
    assert rebound.startswith(b"HTTP/1.1 403 "), rebound
    assert b'"code":"host_not_allowed"' in rebound.replace(b" ", b"")
    operator = {"authorization": f"Bearer {ADMIN_SECRET}"}
    status = httpx.get(f"http://127.0.0.1:{port}/admin/status", headers=operator).json()
    assert status["last_tick"] is None  # no tick ran
    for host in (b"localhost:%d" % port, b"[::1]:%d" % port, b"localhost:8788"):
        assert raw_get(port, target, host).startswith(b"HTTP/1.1 200 "), host  # 8788: PUBLIC_ORIGIN


def test_scheduled_trigger_is_404_outside_development(tmp_path: Path) -> None:
    port = free_port()
    vars_file = write_vars(
        tmp_path / "vars",
        PUBLIC_ORIGIN="https://s.example",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )
    process = serve(tmp_path, vars_file, port, "--no-cron")
    try:
        wait_until_up(port, process)
        assert httpx.get(f"http://127.0.0.1:{port}/__scheduled?cron=*").status_code == 404
    finally:
        process.terminate()
        process.wait(10)


def test_environment_overrides_the_vars_file(tmp_path: Path) -> None:
    port = free_port()
    vars_file = write_vars(
        tmp_path / "vars",
        PUBLIC_ORIGIN="https://file.example",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )
    env = clean_env(PUBLIC_ORIGIN="https://env.example")
    process = serve(tmp_path, vars_file, port, "--no-cron", env=env)
    try:
        wait_until_up(port, process)
        body = httpx.get(f"http://127.0.0.1:{port}/dee-wan/manifest.json").json()
        assert body["origin"] == "https://env.example"
    finally:
        process.terminate()
        process.wait(10)


def test_a_31_byte_token_key_stops_start_up_naming_it_without_its_value(tmp_path: Path) -> None:
    short_key = base64.b64encode(os.urandom(31)).decode()
    vars_file = write_vars(
        tmp_path / "vars",
        PUBLIC_ORIGIN="https://s.example",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=short_key,
    )
    process = serve(tmp_path, vars_file, free_port())
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "TOKEN_KEY" in output
    assert "31 bytes" in output
    assert short_key not in output
    assert ADMIN_SECRET not in output


def test_status_reports_a_tick_and_the_process_logs_it_as_one_json_line(tmp_path: Path) -> None:
    port = free_port()
    vars_file = write_vars(
        tmp_path / "vars",
        ENVIRONMENT="development",
        PUBLIC_ORIGIN="http://localhost:8788",
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )
    process = serve(tmp_path, vars_file, port, "--no-cron")
    try:
        wait_until_up(port, process)
        base = f"http://127.0.0.1:{port}"
        operator = {"authorization": f"Bearer {ADMIN_SECRET}"}
        assert httpx.get(f"{base}/admin/status", headers=operator).json()["last_tick"] is None
        at = next_minute_ms()
        httpx.get(f"{base}/__scheduled", params={"cron": "* * * * *", "time": str(at)})
        status = httpx.get(f"{base}/admin/status", headers=operator).json()
        assert (status["last_tick"]["at"], status["last_tick"]["cron_delay_ms"]) == (rfc3339(at), 0)
        assert (status["stalled"], status["due_backlog"]) == (False, 0)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    [line] = lines
    assert (line["event"], line["at"], line["cron_delay_ms"], line["due"], line["sends"]) == (
        "runner_tick",
        rfc3339(at),
        0,
        0,
        0,
    )
    assert ADMIN_SECRET not in output


def file_modes(db_path: Path) -> dict[str, str]:
    return {
        suffix: oct(stat.S_IMODE(Path(f"{db_path}{suffix}").stat().st_mode))
        for suffix in ("", "-wal", "-shm")
    }


@pytest.mark.parametrize("existing", [False, True])
def test_the_database_and_its_wal_and_shm_are_the_owners_only(
    tmp_path: Path, existing: bool
) -> None:
    """They hold CSRF tokens, names and sealed tokens: 0600 under a umask of 022, whether
    `serve` creates the database or finds one left readable by others."""
    port = free_port()
    db_path = tmp_path / "plugin.sqlite3"
    if existing:
        db_path.touch(mode=0o644)  # an empty file is a new SQLite database
        db_path.chmod(0o644)
    process = serve(tmp_path, good_vars(tmp_path), port, "--no-cron", umask=0o022)
    try:
        wait_until_up(port, process)
        tick = httpx.get(f"http://127.0.0.1:{port}/__scheduled?cron=*")  # a write, in the WAL
        assert tick.status_code == 200, tick.text
        modes = file_modes(db_path)  # -wal and -shm exist while the database is open
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert modes == {"": "0o600", "-wal": "0o600", "-shm": "0o600"}


# -- the `serve` command as a newcomer meets it --------------------------------------------


def run_module(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduling", *args],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def good_vars(tmp_path: Path, origin: str = "http://localhost:8788") -> Path:
    return write_vars(
        tmp_path / ".dev.vars",
        ENVIRONMENT="development",
        PUBLIC_ORIGIN=origin,
        ADMIN_SECRET=ADMIN_SECRET,
        TOKEN_KEY=TOKEN_KEY,
    )


class Output:
    """A process's output lines, read on a thread: wait for one line, then read them all."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait_for(self, needle: str, timeout_s: float = 20) -> str:
        """Everything up to now, once a line contains `needle`."""
        with self._changed:
            self._changed.wait_for(
                lambda: self.ended or any(needle in line for line in self.lines), timeout_s
            )
            text = "".join(self.lines)
        assert needle in text, f"no line with {needle!r} in:\n{text}"
        return text

    def all(self, timeout_s: float = 20) -> str:
        """Everything, once the output has ended."""
        with self._changed:
            assert self._changed.wait_for(lambda: self.ended, timeout_s)
            return "".join(self.lines)


def test_the_module_alone_prints_its_usage_and_exits_2(tmp_path: Path) -> None:
    result = run_module(tmp_path)
    assert result.returncode == 2
    assert "serve" in result.stderr
    assert "usage: python -m scheduling" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_db_in_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    vars_file = good_vars(tmp_path)
    missing = tmp_path / "no-such-folder" / "plugin.sqlite3"
    result = run_module(tmp_path, "serve", "--db", str(missing), "--vars", str(vars_file))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line == (
        f"scheduling: --db {missing}: the folder {missing.parent} does not exist; create it first"
    )
    assert not missing.parent.exists()


def test_an_admin_secret_of_one_repeated_character_stops_start_up_in_one_line(
    tmp_path: Path,
) -> None:
    weak = "a" * 16
    vars_file = write_vars(
        tmp_path / ".dev.vars",
        PUBLIC_ORIGIN="https://s.example",
        ADMIN_SECRET=weak,
        TOKEN_KEY=TOKEN_KEY,
    )
    result = run_module(tmp_path, "serve", "--db", "plugin.sqlite3", "--vars", str(vars_file))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "scheduling: refusing to start, invalid configuration: ADMIN_SECRET: has too little variety"
    )
    assert weak not in line
    assert not (tmp_path / "plugin.sqlite3").exists()


def test_a_taken_port_is_one_line_and_nothing_says_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_module(
            tmp_path, "serve", "--port", str(port), "--db", "plugin.sqlite3",
            "--vars", str(good_vars(tmp_path)),
        )  # fmt: skip
    assert result.returncode == 2
    assert f"scheduling: cannot listen on 127.0.0.1:{port}: " in result.stderr
    assert "serving" not in result.stderr
    assert "Traceback" not in result.stderr


def test_serving_is_said_once_the_port_listens_with_the_status_command(tmp_path: Path) -> None:
    port = free_port()
    vars_file = good_vars(tmp_path)  # PUBLIC_ORIGIN names port 8788, not this one
    process = serve(tmp_path, vars_file, port, "--no-cron")
    output = Output(process)
    try:
        output.wait_for("serving ")
        # No retry: once "serving" is said, the port answers.
        assert httpx.get(f"http://127.0.0.1:{port}/dee-wan/manifest.json").status_code == 200
    finally:
        process.terminate()
        said = output.all()
    assert f"serving http://localhost:8788 on http://127.0.0.1:{port} (cron off)" in said
    status = (
        f"curl -H \"Authorization: Bearer $(sed -n 's/^ADMIN_SECRET=//p' {vars_file})\""
        f" http://127.0.0.1:{port}/admin/status"
    )
    assert status in said
    assert f"PUBLIC_ORIGIN is http://localhost:8788 but this server listens on port {port}" in said
    assert ADMIN_SECRET not in said


def test_a_public_origin_on_the_served_port_is_not_warned_about(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path, good_vars(tmp_path, f"http://localhost:{port}"), port, "--no-cron")
    try:
        wait_until_up(port, process)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    assert "serving" in output
    assert "PUBLIC_ORIGIN is" not in output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_a_signal_stops_the_server_cleanly_with_its_cron_and_clocks(
    tmp_path: Path, sig: signal.Signals
) -> None:
    port = free_port()
    vars_file = good_vars(tmp_path, f"http://localhost:{port}")
    with vars_file.open("a") as more:
        more.write("SCHEDULE_CLOCK=1\n")
    process = serve(tmp_path, vars_file, port)
    output = Output(process)
    try:
        output.wait_for("alarm clocks armed from D1")
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        process.send_signal(sig)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    said = output.all()
    assert "(cron on, an alarm clock per installation)" in said
    assert said.rstrip().endswith("INFO scheduling: stopped"), said
    assert "Traceback" not in said
    assert "destroyed but it is pending" not in said


def wait_until_refused(port: int) -> None:
    """Until the server no longer accepts connections (it has begun to shut down)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return
        time.sleep(0.05)
    raise AssertionError("the server still accepts connections")


@pytest.mark.parametrize("again", [False, True], ids=["one signal", "a second Ctrl-C"])
def test_a_request_whose_body_never_comes_does_not_hold_the_stop(
    tmp_path: Path, again: bool
) -> None:
    """Told to stop, the server lets a request under way finish for a few seconds, then
    cancels it (uvicorn says so, with the request's traceback): this one's body never comes.
    A second Ctrl-C stops without waiting."""
    port = free_port()
    process = serve(tmp_path, good_vars(tmp_path, f"http://localhost:{port}"), port)
    output = Output(process)
    try:
        output.wait_for("serving ")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(
                b"POST /dee-wan/activate HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/json\r\nContent-Length: 10\r\n\r\n"
            )
            # Answered on a later connection: the server has read the slow request's head.
            assert httpx.get(f"http://127.0.0.1:{port}/dee-wan/manifest.json").status_code == 200
            process.send_signal(signal.SIGTERM)
            if again:
                wait_until_refused(port)
                process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    said = output.all()
    waited = "Cancel 1 running task(s), timeout graceful shutdown exceeded" in said
    assert waited is not again, said
    assert said.rstrip().endswith("INFO scheduling: stopped"), said


@pytest.mark.parametrize(
    ("origin", "port", "warned"),
    [
        ("http://localhost:8788", 8788, False),
        ("http://localhost:8788", 9000, True),
        ("http://127.0.0.1:9000", 9000, False),
        ("http://[::1]:8788", 9000, True),
        ("http://localhost", 80, False),
        ("https://localhost", 8788, True),
        ("https://scheduling.example", 8788, False),  # reached through a proxy
    ],
)
def test_only_a_loopback_origin_on_another_port_is_warned_about(
    origin: str, port: int, warned: bool
) -> None:
    assert (origin_port_warning(origin, port) is not None) is warned


def test_the_status_command_reads_the_secret_where_the_server_did() -> None:
    config = Configuration.from_mapping(
        {"PUBLIC_ORIGIN": "https://s.example", "ADMIN_SECRET": ADMIN_SECRET, "TOKEN_KEY": TOKEN_KEY}
    )
    from_file = banner(
        config, 8788, cron=True, vars_path=Path("my vars"), secret_in_environment=False
    )
    assert "Bearer $(sed -n 's/^ADMIN_SECRET=//p' 'my vars')" in from_file[1]
    from_env = banner(
        config, 8788, cron=True, vars_path=Path("my vars"), secret_in_environment=True
    )
    assert 'Bearer $ADMIN_SECRET" http://127.0.0.1:8788/admin/status' in from_env[1]
    assert not any("__scheduled" in line for line in from_env)  # not in production
