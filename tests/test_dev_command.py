"""`bash scripts/dev` as a person runs it: the real command, the printed URL, a real browser, Ctrl-C.

Each test runs the command from the repo in its own process group with free
ports and `--state-dir` in a temporary folder, reads what it prints, and ends
it the way a terminal's Ctrl-C does: SIGINT to the whole group.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest
from playwright.sync_api import Locator, Page, sync_playwright

from scheduling.config import SECRETS, VARIABLES
from scheduling.runtimes.cpython.dev_vars import parse_dev_vars
from tests.test_browser_walk import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PERSON,
    _missing,
    confirmed_id,
    free_port,
    minutes_ahead,
    run_tick,
    schedule_item,
)

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"
OPEN_LINE = re.compile(r"^Open (http://\S+)", re.MULTILINE)
ZONE = "America/New_York"


class DevCommand:
    """`bash scripts/dev --plugin-port P --core-port C --state-dir DIR`, its output read as it comes."""

    def __init__(self, state_dir: Path, core_port: int | None = None) -> None:
        self.plugin_port, self.core_port = free_port(), core_port or free_port()
        while self.core_port == self.plugin_port:
            self.plugin_port = free_port()
        self.plugin_origin = f"http://localhost:{self.plugin_port}"
        # Whatever the person running the tests has set must not reach the plugin.
        env = {k: v for k, v in os.environ.items() if k not in (*VARIABLES, *SECRETS)}
        self.process = subprocess.Popen(
            [BASH, "scripts/dev", "--plugin-port", str(self.plugin_port),
             "--core-port", str(self.core_port), "--state-dir", str(state_dir)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [
            threading.Thread(target=_drain, args=(self.process.stdout, self._out), daemon=True),
            threading.Thread(target=_drain, args=(self.process.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    @property
    def output(self) -> str:
        return f"--- stdout\n{self.stdout}--- stderr\n{''.join(self._err)}"

    def printed_url(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = OPEN_LINE.search(self.stdout)
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"scripts/dev printed no 'Open http://…' line:\n{self.output}")

    def interrupt(self, timeout: float = 15) -> int:
        """Ctrl-C: SIGINT to the process group; the exit status."""
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"scripts/dev still runs {timeout} s after SIGINT:\n{self.output}")
        self.join_readers()
        return status

    def join_readers(self) -> None:
        for reader in self._readers:
            reader.join(10)  # the pipes close once every child has gone too

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _drain(stream: IO[bytes], into: list[str]) -> None:
    for line in iter(stream.readline, b""):
        into.append(line.decode("utf-8", "replace"))


@pytest.fixture
def run_dev() -> Iterator[type[DevCommand]]:
    started: list[DevCommand] = []

    class Tracked(DevCommand):
        def __init__(self, state_dir: Path, core_port: int | None = None) -> None:
            super().__init__(state_dir, core_port)
            started.append(self)

    yield Tracked
    for command in started:
        command.kill()  # a failed test leaves nothing running


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def assert_stops_cleanly(dev: DevCommand) -> None:
    status = dev.interrupt()
    assert status == 0, dev.output
    assert "Traceback" not in dev.output, dev.output
    assert refuses(dev.plugin_port), "the plugin still listens after Ctrl-C"
    assert refuses(dev.core_port), "the local Dee Wan still listens after Ctrl-C"


def content_row(page: Page, content_id: str) -> tuple[dict[str, str], Locator]:
    """The home page's row of `content_id`, cell texts by column heading, and its locator."""
    published = page.get_by_role("columnheader", name="published", exact=True)
    table = page.locator("table").filter(has=published)
    assert table.count() == 1, "one content table with a published column"
    headings = [h.strip() for h in table.locator("th").all_inner_texts()]
    row = table.locator("tr").filter(has=page.get_by_role("cell", name=content_id, exact=True))
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    return dict(zip(headings, cells, strict=True)), row


@pytest.mark.browser
@pytest.mark.skipif(_missing() is not None, reason=_missing() or "")
def test_dev_prints_the_url_a_schedule_made_there_is_applied_and_ctrl_c_stops_it(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    repo_vars_before = (ROOT / ".dev.vars").exists()
    dev = run_dev(tmp_path)
    url = dev.printed_url()
    assert url == f"http://localhost:{dev.core_port}/", dev.output

    # Fresh secrets, in the state dir only, readable by the owner only, never printed.
    made = tmp_path / ".dev.vars"
    assert made.stat().st_mode & 0o777 == 0o600
    values = parse_dev_vars(made.read_text())
    assert values["ENVIRONMENT"] == "development"
    assert len(values["ADMIN_SECRET"]) >= 16
    assert len(base64.b64decode(values["TOKEN_KEY"], validate=True)) == 32
    assert (ROOT / ".dev.vars").exists() == repo_vars_before, "--state-dir must hold .dev.vars"
    installation = httpx.get(f"{url}__fake/state", timeout=10).json()["installations"][0]["id"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(locale="en-US").new_page()
            page.goto(url)
            assert page.get_by_role("heading", name="Local Dee Wan").is_visible()
            before, row = content_row(page, "cnt_news")
            assert before["published"] == "—", before

            # An editor presses Schedule on the content and publishes two minutes ahead.
            row.get_by_label("as person").select_option(label=PERSON)
            with page.expect_navigation(url=f"{dev.plugin_origin}/installations/{installation}"):
                row.get_by_role("button", name=f"Schedule ({installation})").click()
            publish = page.get_by_role("radio", name=re.compile(r"^Publish version "))
            publish.check()
            local, due_ms = minutes_ahead(ZONE, 2)
            page.locator("#local_time").fill(local)
            page.locator("#timezone").fill(ZONE)
            with page.expect_navigation():
                page.get_by_role("button", name="Schedule", exact=True).click()
            made_id = confirmed_id(page)
            notice = page.locator("[data-confirmation]")
            pinned = notice.locator("code").inner_text()
            assert pinned == before["current"], (pinned, before)
            assert f"({ZONE})" in notice.inner_text()
            assert schedule_item(page, made_id).get_attribute("data-status") == "pending"

            # The next minute's tick, run now at that instant.
            run_tick(dev.plugin_origin, due_ms + 1000)

            page.goto(url)
            after, _ = content_row(page, "cnt_news")
            assert after["published"] == pinned, after
        finally:
            browser.close()

    assert_stops_cleanly(dev)
    for name in ("ADMIN_SECRET", "TOKEN_KEY"):
        printed = values[name] in dev.output  # a bare bool: a failure must not show the value
        assert not printed, f"{name} was printed"


def test_an_existing_dev_vars_is_kept_byte_for_byte(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    existing = tmp_path / ".dev.vars"
    # Another port than this run's: the command gives the plugin its origin through the environment.
    existing.write_text(
        "# mine\nENVIRONMENT=development\nPUBLIC_ORIGIN=http://localhost:1\n"
        "ADMIN_SECRET=kept-operator-secret-0123456789\n"
        f"TOKEN_KEY={base64.b64encode(bytes(range(32))).decode()}\n"
    )
    existing.chmod(0o640)
    before = existing.read_bytes()
    dev = run_dev(tmp_path)
    dev.printed_url()  # printed only after the plugin was installed with ADMIN_SECRET from the file
    manifest = httpx.get(f"{dev.plugin_origin}/dee-wan/manifest.json", timeout=10)
    assert manifest.status_code == 200
    assert dev.plugin_origin in manifest.text and "localhost:1/" not in manifest.text
    assert_stops_cleanly(dev)
    assert existing.read_bytes() == before
    assert existing.stat().st_mode & 0o777 == 0o640
    printed = "kept-operator-secret-0123456789" in dev.output
    assert not printed, "ADMIN_SECRET was printed"


def test_a_port_in_use_is_said_plainly(run_dev: type[DevCommand], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        dev = run_dev(tmp_path, core_port=taken.getsockname()[1])
        status = dev.process.wait(60)
    dev.join_readers()
    assert status != 0, dev.output
    assert f"port {dev.core_port} is already in use" in dev.output
    assert "Traceback" not in dev.output, dev.output
    assert refuses(dev.plugin_port), "nothing may be left running"
