"""`bash scripts/dev` as a person runs it: the real command, the printed URL, a browser, Ctrl-C.

Each test runs the command from the repo in its own process group with free
ports and `--state-dir` in a temporary folder, reads what it prints, and ends
it the way a terminal's Ctrl-C does: SIGINT to the whole group. A second run
on the same ports and state dir carries on where the first stopped.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, sync_playwright

from scheduling.config import SECRETS, VARIABLES
from scheduling.runtimes.cpython.server import parse_dev_vars
from scripts.devstack.stack import DevStack
from tests.support.app import TOKEN_KEY
from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PERSON,
    confirmed_id,
    free_port,
    minutes_ahead,
    missing_pieces,
    run_tick,
    schedule_item,
)

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash") or "/bin/bash"
OPEN_LINE = re.compile(r"^Open (http://\S+)", re.MULTILINE)
ZONE = "America/New_York"


class DevCommand:
    """`bash scripts/dev --plugin-port P --core-port C --state-dir DIR`, output read as it comes."""

    def __init__(
        self, state_dir: Path, core_port: int | None = None, plugin_port: int | None = None
    ) -> None:
        self.plugin_port, self.core_port = plugin_port or free_port(), core_port or free_port()
        while self.core_port == self.plugin_port:
            self.plugin_port = free_port()
        self.plugin_origin = f"http://localhost:{self.plugin_port}"
        self.core_origin = f"http://localhost:{self.core_port}"
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
        def __init__(
            self, state_dir: Path, core_port: int | None = None, plugin_port: int | None = None
        ) -> None:
            super().__init__(state_dir, core_port, plugin_port)
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
@pytest.mark.skipif(missing_pieces() is not None, reason=missing_pieces() or "")
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
            landed = f"{dev.plugin_origin}/installations/{installation}"
            with page.expect_navigation(url=re.compile(re.escape(landed) + r"\?tab=")):
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
            assert f"({ZONE}; " in notice.inner_text()
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
        f"TOKEN_KEY={TOKEN_KEY}\n"
    )
    existing.chmod(0o640)
    before = existing.read_bytes()
    dev = run_dev(tmp_path)
    dev.printed_url()  # printed only after the plugin was installed with ADMIN_SECRET from the file
    manifest = httpx.get(f"{dev.plugin_origin}/dee-wan/manifest.json", timeout=10)
    assert manifest.status_code == 200
    assert dev.plugin_origin in manifest.text
    assert "localhost:1/" not in manifest.text
    assert_stops_cleanly(dev)
    assert existing.read_bytes() == before
    assert existing.stat().st_mode & 0o777 == 0o640
    printed = "kept-operator-secret-0123456789" in dev.output
    assert not printed, "ADMIN_SECRET was printed"


def test_the_vars_files_development_origins_are_kept_beside_the_local_dee_wans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 45 item 15: the command gave the plugin DEE_WAN_DEV_ORIGINS as the local Dee
    Wan's origin alone, over the file's, so a developer could not add their own receiver of
    notifications. The file's (or the environment's) origins are kept, once each."""
    monkeypatch.delenv("DEE_WAN_DEV_ORIGINS", raising=False)
    stack = DevStack(plugin_port=8790, core_port=8791, state_dir=tmp_path)
    assert stack.plugin_variables()["DEE_WAN_DEV_ORIGINS"] == "http://localhost:8791"
    stack.vars_path.write_text("DEE_WAN_DEV_ORIGINS=http://localhost:9000, http://localhost:8791\n")
    given = stack.plugin_variables()
    assert given["DEE_WAN_DEV_ORIGINS"] == "http://localhost:8791,http://localhost:9000"
    assert (given["ENVIRONMENT"], given["PUBLIC_ORIGIN"]) == ("development", stack.plugin_origin)
    monkeypatch.setenv("DEE_WAN_DEV_ORIGINS", "http://receiver.test:8000")
    assert stack.plugin_variables()["DEE_WAN_DEV_ORIGINS"] == (
        "http://localhost:8791,http://receiver.test:8000"
    )


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


def processes_naming(marker: str) -> list[str]:
    """The command lines of running processes that name `marker` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in command and state != "Z":
            found.append(command)
    return found


def handles_sigterm(pid: int) -> bool:
    """Whether `pid` has a SIGTERM handler (SigCgt): bash and Python install none, scripts/dev
    does, first thing."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


def stop_early(state_dir: Path, when: str, how: str) -> tuple[int | None, bool, str, list[str]]:
    """Start scripts/dev, stop it `when` (seconds after spawn, or once it printed its URL):
    `term`, SIGTERM to it alone, as a process manager does; `ctrl-c`, SIGINT to its group.
    (exit status, its handlers were in place, output, processes left naming the state dir)."""
    dev = DevCommand(state_dir)
    try:
        if when == "url":
            dev.printed_url()
        else:
            time.sleep(float(when))
        in_place = handles_sigterm(dev.process.pid)
        if how == "term":
            dev.process.send_signal(signal.SIGTERM)
        else:
            os.killpg(dev.process.pid, signal.SIGINT)
        try:
            status: int | None = dev.process.wait(60)
        except subprocess.TimeoutExpired:
            status = None
        left = processes_naming(str(state_dir))
        dev.join_readers()
        return status, in_place, dev.output, left
    finally:
        with contextlib.suppress(ProcessLookupError):  # anything left in its group ends here
            os.killpg(dev.process.pid, signal.SIGKILL)
        dev.kill()


def test_a_signal_at_any_point_of_start_up_leaves_no_process_behind(tmp_path: Path) -> None:
    """Twelve starts ended early, three at a time: by SIGTERM to scripts/dev alone (it must
    stop both children itself) or by Ctrl-C to its group, from its first instants to after
    the URL is printed. Once its handlers are in place it exits 0, and no process it started
    outlives it."""
    runs = [
        (tmp_path / f"run{i}", when, how)
        for i, (when, how) in enumerate(
            (when, how)
            for when in ("0.1", "0.3", "0.5", "0.8", "1.2", "url")
            for how in ("term", "ctrl-c")
        )
    ]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda run: (run, stop_early(*run)), runs))
    for (_, when, how), (status, in_place, output, left) in results:
        assert status is not None, f"still running after {how} at {when}:\n{output}"
        assert left == [], f"left running after {how} at {when}: {left}"
        if in_place:
            assert status == 0, f"{how} at {when}: status {status}\n{output}"
            if how == "term":  # (Ctrl-C also reaches the children, maybe before their handlers)
                assert "Traceback" not in output, output
    assert sum(in_place for _, (_, in_place, _, _) in results) >= 4


# -- a second run carries on ------------------------------------------------------------

SCHEDULE_CARD = re.compile(r'data-schedule-id="([^"]+)" data-status="([^"]+)"')


class Editor:
    """Ada, launched from the local Dee Wan into the plugin, using its forms without a browser."""

    def __init__(self, dev: DevCommand, installation_id: str, content_id: str) -> None:
        self.dev, self.installation_id = dev, installation_id
        issued = httpx.post(
            f"{dev.core_origin}/__fake/launch",
            json={
                "installation_id": installation_id,
                "person_id": "usr_editor",
                "content_id": content_id,
            },
            timeout=10,
        )
        assert issued.status_code == 200, issued.text
        self.http = httpx.Client(base_url=dev.plugin_origin, timeout=30)
        exchanged = self.http.get(issued.json()["url"])
        assert exchanged.status_code == 303, exchanged.text
        # The __Host- cookie is Secure: httpx keeps it from http://localhost, so by hand.
        self.cookie = exchanged.headers["set-cookie"].split(";", 1)[0]

    def page(self, path: str | None = None) -> str:
        shown = self.http.get(
            path or f"/installations/{self.installation_id}", headers={"cookie": self.cookie}
        )
        assert shown.status_code == 200, shown.text
        return shown.text

    def schedules(self) -> dict[str, str]:
        """The schedules the content page shows: id -> status."""
        return dict(SCHEDULE_CARD.findall(self.page()))

    def schedule_publish(self, local: str, zone: str) -> str:
        """Fill in and send the page's form; the id the confirmation names."""
        hidden = dict(
            re.findall(
                r'name="(csrf_token|version_id|published_version_id)" value="([^"]*)"',
                self.page(),
            )
        )
        form = {**hidden, "transition": "publish:published", "local_time": local, "timezone": zone}
        made = self.http.post(
            f"/installations/{self.installation_id}/schedules",
            data=form,
            headers={
                "cookie": self.cookie,
                "origin": self.dev.plugin_origin,
                "sec-fetch-site": "same-origin",
            },
        )
        assert made.status_code == 303, made.text
        confirmed = re.search(r'data-confirmation="([^"]+)"', self.page(made.headers["location"]))
        assert confirmed is not None, "no confirmation after the form was sent"
        return confirmed.group(1)

    def close(self) -> None:
        self.http.close()


def core_state(dev: DevCommand) -> dict[str, Any]:
    state: dict[str, Any] = httpx.get(f"{dev.core_origin}/__fake/state", timeout=10).json()
    return state


def token_hashes(dev: DevCommand) -> dict[str, str]:
    """Each active installation's token as the local Dee Wan holds it, hashed (never shown)."""
    return {
        i["id"]: hashlib.sha256(i["token"].encode()).hexdigest()
        for i in core_state(dev)["installations"]
        if not i["revoked"]
    }


def group(state: dict[str, Any], primary_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(g for g in state["groups"] if g["primary_id"] == primary_id)
    return found


def tick_at(dev: DevCommand, at_ms: int) -> None:
    tick = httpx.get(
        f"{dev.plugin_origin}/__scheduled",
        params={"cron": "* * * * *", "time": str(at_ms)},
        timeout=30,
    )
    assert (tick.status_code, tick.json()["code"]) == (200, "tick_finished"), tick.text


def utc_minutes_ahead(minutes: int) -> tuple[str, int]:
    """A UTC wall time `minutes` from now (whole minute), and its instant in epoch ms."""
    instant = (datetime.now(UTC) + timedelta(minutes=minutes)).replace(second=0, microsecond=0)
    return instant.strftime("%Y-%m-%dT%H:%M"), int(instant.timestamp() * 1000)


def test_a_second_run_shows_the_first_runs_schedule_and_it_still_works(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    first = run_dev(tmp_path)
    first.printed_url()
    [installation] = [i["id"] for i in core_state(first)["installations"]]
    # Made in the local Dee Wan: a new version, which the schedule then pins.
    edited = httpx.post(
        f"{first.core_origin}/__fake/content",
        json={"content_id": "cnt_news", "action": "edit"},
        timeout=10,
    )
    assert edited.status_code == 200, edited.text
    version = group(core_state(first), "cnt_news")["current_version_id"]
    token = token_hashes(first)
    # Far enough ahead that no cron tick of either run sends it on its own.
    local, due_ms = utc_minutes_ahead(10)
    editor = Editor(first, installation, "cnt_news")
    made = editor.schedule_publish(local, "UTC")
    assert editor.schedules() == {made: "pending"}
    editor.close()
    assert_stops_cleanly(first)

    second = run_dev(tmp_path, core_port=first.core_port, plugin_port=first.plugin_port)
    assert second.printed_url() == f"{second.core_origin}/"
    assert (
        f"installed  {installation}, the last run's, with its schedules and its token"
        in second.stdout
    ), second.output
    assert token_hashes(second) == token, "a restart keeps the token"
    assert "rotation code" not in second.output, "nor does it mint a code to rotate it"
    state = core_state(second)
    assert [(i["id"], i["revoked"]) for i in state["installations"]] == [(installation, False)]
    assert group(state, "cnt_news")["current_version_id"] == version
    editor = Editor(second, installation, "cnt_news")
    assert editor.schedules() == {made: "pending"}, "the first run's schedule is on the page"

    tick_at(second, due_ms + 1_000)
    assert editor.schedules() == {made: "completed"}, second.output
    editor.close()
    news = group(core_state(second), "cnt_news")
    assert news["published_version_id"] == version
    assert [(e["kind"], e["installation_id"]) for e in news["log"]] == [("publish", installation)]
    assert_stops_cleanly(second)


def test_a_second_run_installs_anew_when_the_plugin_lost_its_database(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    first = run_dev(tmp_path)
    first.printed_url()
    [lost] = [i["id"] for i in core_state(first)["installations"]]
    assert_stops_cleanly(first)
    for database in tmp_path.glob("plugin.sqlite3*"):
        database.unlink()

    second = run_dev(tmp_path, core_port=first.core_port, plugin_port=first.plugin_port)
    second.printed_url()
    assert f"(the plugin's database no longer held {lost})" in second.stdout, second.output
    installations = {i["id"]: i["revoked"] for i in core_state(second)["installations"]}
    assert installations.pop(lost) is True, "the lost installation is uninstalled"
    [(fresh, revoked)] = installations.items()
    assert not revoked
    assert f'press "Schedule ({fresh})"' in second.stdout
    assert_stops_cleanly(second)


def test_a_run_on_another_plugin_port_retires_the_installation_no_one_serves(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    first = run_dev(tmp_path)
    first.printed_url()
    [old] = [i["id"] for i in core_state(first)["installations"]]
    local, due_ms = utc_minutes_ahead(10)
    editor = Editor(first, old, "cnt_news")
    made = editor.schedule_publish(local, "UTC")
    tick_at(first, due_ms + 1_000)
    assert editor.schedules() == {made: "completed"}
    editor.close()
    assert_stops_cleanly(first)

    # `scripts/dev --plugin-port <another>` on the same state.
    second = run_dev(tmp_path, core_port=first.core_port)
    second.printed_url()
    assert (
        f"retired    {old} was for the plugin at {first.plugin_origin}, which this run does "
        "not serve: uninstalled (its waiting schedules will be refused)"
    ) in second.stdout, second.output
    installations = {i["id"]: i for i in core_state(second)["installations"]}
    assert installations.pop(old)["revoked"] is True
    [(fresh, installation)] = installations.items()
    assert (installation["plugin_origin"], installation["revoked"]) == (
        second.plugin_origin,
        False,
    )
    assert f'press "Schedule ({fresh})"' in second.stdout

    # The home page offers only the buttons that work, and its log kept the last run's send.
    page = httpx.get(f"{second.core_origin}/", timeout=10).text
    assert f"({old})" not in page.split('<h2 id="transitions">', 1)[0]
    assert f"Schedule ({fresh})" in page
    log = page.split('<h2 id="transitions">', 1)[1]
    assert "200 transition_applied" in log
    assert f">{old}</td>" in log
    editor = Editor(second, fresh, "cnt_news")  # the launch reaches the plugin on its new port
    assert editor.schedules() == {}
    editor.close()
    assert_stops_cleanly(second)


def test_a_token_the_plugin_can_no_longer_read_is_rotated_and_its_schedule_still_sends(
    run_dev: type[DevCommand], tmp_path: Path
) -> None:
    first = run_dev(tmp_path)
    first.printed_url()
    [installation] = token_hashes(first)
    token = token_hashes(first)[installation]
    local, due_ms = utc_minutes_ahead(10)
    editor = Editor(first, installation, "cnt_news")
    made = editor.schedule_publish(local, "UTC")
    editor.close()
    assert_stops_cleanly(first)
    # The developer gives the plugin another TOKEN_KEY: the sealed token cannot be opened.
    dev_vars = tmp_path / ".dev.vars"
    new_key = base64.b64encode(os.urandom(32)).decode()
    dev_vars.write_text(re.sub(r"(?m)^TOKEN_KEY=.*$", f"TOKEN_KEY={new_key}", dev_vars.read_text()))

    second = run_dev(tmp_path, core_port=first.core_port, plugin_port=first.plugin_port)
    second.printed_url()
    assert (
        f"installed  {installation}, the last run's, with its schedules; token rotated: the "
        "plugin could not use the token it held (HTTP 503 token_unreadable)"
    ) in second.stdout, second.output
    assert set(token_hashes(second)) == {installation}
    assert token_hashes(second)[installation] != token
    tick_at(second, due_ms + 1_000)
    editor = Editor(second, installation, "cnt_news")
    assert editor.schedules() == {made: "completed"}, second.output
    editor.close()
    assert_stops_cleanly(second)
    printed = new_key in second.output
    assert not printed, "TOKEN_KEY was printed"
