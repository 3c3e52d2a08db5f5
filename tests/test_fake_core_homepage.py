"""fake_core's home page as a person uses it: rotate, one-click codes, the transitions log;
forms posted in-process through `FakeCoreApp.dispatch` to a plugin double that mints one-time
codes behind an operator secret and accepts each once, for its own kind and installation.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import subprocess
import sys
from datetime import UTC, datetime
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from fake_core import FakeCore, Fault, Installation, httpx_caller, parse_rfc3339, rfc3339
from fake_core.app import FakeCoreApp
from fake_core.home import LOG_LIMIT
from fake_core.saved_state import StateFile
from fake_core.state import RECEIVED_LIMIT
from fake_core.testing import ORIGIN, encode, manifest, sample_core, transition_command
from fake_core.wire import Reply
from scheduling.ports import TransportError
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ORIGIN as APP_ORIGIN
from tests.support.app import FakeClock, base_env
from tests.support.serve_process import free_port
from tests.support.world import World

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0
HOST = "127.0.0.1:8787"
SECRET = "operator-" + secrets.token_urlsafe(24)
TRANSITIONS = "/api/plugins/v1/transitions"
JSON = {"content-type": "application/json"}


class PluginDouble:
    """Manifest, activate/rotate and `POST /admin/activation-codes`, like the plugin.

    A minted code is good once, for its kind: an activation code activates, a
    rotation code rotates the installation it was minted for.
    """

    def __init__(self, secret: str = SECRET) -> None:
        self.secret = secret
        self.codes: dict[str, str | None] = {}  # code -> installation id (None: activation)
        self.mints: list[tuple[dict[str, str], bytes | None]] = []
        self.activations: list[dict[str, Any]] = []
        self.mint_answer: tuple[int, bytes] | None = None  # forced answer to a mint
        self.mint_raises: Exception | None = None

    def mint(self, installation_id: str | None = None) -> str:
        code = "dwa_" + secrets.token_urlsafe(32)
        self.codes[code] = installation_id
        return code

    async def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        if (method, url) == ("GET", f"{ORIGIN}/dee-wan/manifest.json"):
            return 200, JSON, json.dumps(manifest()).encode()
        if (method, url) == ("POST", f"{ORIGIN}/admin/activation-codes"):
            self.mints.append((dict(headers), body))
            if self.mint_raises is not None:
                raise self.mint_raises
            if self.mint_answer is not None:
                return self.mint_answer[0], JSON, self.mint_answer[1]
            if headers.get("authorization") != f"Bearer {self.secret}":
                return (
                    401,
                    JSON,
                    b'{"code":"unauthorized","message":"operator bearer token required"}',
                )
            data = json.loads(body) if body else {}
            code = self.mint(data.get("installation_id"))
            return 201, JSON, json.dumps({"code": code, "kind": "x"}).encode()
        assert (method, url) == ("POST", f"{ORIGIN}/dee-wan/activate")
        data = json.loads(body or b"")
        self.activations.append(data)
        wanted = None if data["action"] == "activate" else data["installation_id"]
        if data["code"] not in self.codes or self.codes.pop(data["code"]) != wanted:
            return 401, JSON, b'{"code":"invalid_code"}'
        if data["action"] == "activate":
            return 201, JSON, b'{"code":"activated"}'
        return 200, JSON, b'{"code":"rotated"}'


@pytest.fixture
def plugin() -> PluginDouble:
    return PluginDouble()


@pytest.fixture
def core() -> FakeCore:
    return sample_core(T0)


@pytest.fixture
def app(core: FakeCore, plugin: PluginDouble) -> FakeCoreApp:
    return FakeCoreApp(core, plugin_origin=ORIGIN, plugin_caller=plugin, plugin_admin_secret=SECRET)


async def post(
    app: FakeCoreApp, action: str, form: dict[str, str], origin: str | None = None
) -> Reply:
    headers = {"Host": HOST, "Content-Type": "application/x-www-form-urlencoded"}
    if origin is not None:
        headers["Origin"] = origin
    return await app.dispatch("POST", f"/ui/{action}", headers, urlencode(form).encode())


async def home(app: FakeCoreApp) -> str:
    reply = await app.dispatch("GET", "/", {"Host": HOST}, b"")
    assert reply.status == 200
    return reply.body.decode()


async def act(app: FakeCoreApp, action: str, form: dict[str, str]) -> tuple[str, str]:
    """Post a form as the page does (same origin); the notice and the page shown after."""
    reply = await post(app, action, form, origin=f"http://{HOST}")
    assert (reply.status, reply.headers["location"]) == (303, "/")
    page = await home(app)
    found = re.search(r'<p class="notice" role="status">(.*?)</p>', page, re.S)
    assert found is not None, "the action left no notice"
    assert SECRET not in page
    return unescape(found.group(1)), page


async def installed(app: FakeCoreApp, plugin: PluginDouble) -> Installation:
    notice, _ = await act(app, "install", {"plugin_origin": ORIGIN, "code": plugin.mint()})
    [installation] = app.core.state.installations.values()
    assert notice == f"Installed {installation.id}."
    return installation


def log_rows(page: str) -> list[list[str]]:
    """The cells of the transitions log, row by row, unescaped."""
    log = page.split('<h2 id="transitions">Transitions received</h2>', 1)[1]
    return [
        [unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", log, re.S)
        if "<td" in row
    ]


async def send(core: FakeCore, headers: dict[str, str], body: Any) -> tuple[int, str]:
    status, _, answer = await core.handle("POST", TRANSITIONS, headers, encode(body))
    return status, json.loads(answer)["code"]


# -- rotating ------------------------------------------------------------------------


async def test_rotate_with_a_pasted_code_changes_the_token(
    app: FakeCoreApp, plugin: PluginDouble
) -> None:
    installation = await installed(app, plugin)
    old = installation.token
    page = await home(app)
    assert f"Rotation code for {installation.id}" in page
    assert "Rotate with code" in page

    notice, _ = await act(
        app, "rotate", {"installation_id": installation.id, "code": plugin.mint(installation.id)}
    )
    assert notice == f"Rotated the token of {installation.id}; the old token no longer works."
    assert installation.token != old
    assert plugin.activations[-1]["action"] == "rotate"
    assert plugin.activations[-1]["token"] == installation.token


async def test_a_refused_rotation_code_says_so_and_keeps_the_token(
    app: FakeCoreApp, plugin: PluginDouble
) -> None:
    installation = await installed(app, plugin)
    old = installation.token
    activation_code = plugin.mint()  # the wrong kind: not bound to the installation
    notice, _ = await act(
        app, "rotate", {"installation_id": installation.id, "code": activation_code}
    )
    assert notice == ("Rotation failed: the plugin answered 401 (invalid_code). Nothing changed.")
    assert installation.token == old


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ({"installation_id": "ins_nope", "code": "dwa_x"}, "There is no installation ins_nope."),
        ({"code": "dwa_x"}, "The form did not say which installation id."),
    ],
)
async def test_rotate_for_an_unknown_installation_is_a_plain_notice(
    app: FakeCoreApp, plugin: PluginDouble, form: dict[str, str], expected: str
) -> None:
    assert (await act(app, "rotate", form))[0] == expected
    assert (await act(app, "rotate-now", form))[0] == expected
    assert plugin.mints == []
    assert plugin.activations == []


async def test_rotate_an_installation_core_registered_without_a_plugin(
    app: FakeCoreApp, core: FakeCore
) -> None:
    installation = core.register_installation(ORIGIN)
    notice, _ = await act(app, "rotate", {"installation_id": installation.id, "code": "dwa_x"})
    assert notice.startswith("Rotation failed: this installation was not installed through")


async def test_one_click_rotate_mints_with_the_operator_secret_then_rotates(
    app: FakeCoreApp, plugin: PluginDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    installation = await installed(app, plugin)
    old = installation.token
    page = await home(app)
    assert "<button>Rotate token</button>" in page

    notice, page = await act(app, "rotate-now", {"installation_id": installation.id})
    assert notice == (
        f"Minted a rotation code at the plugin and rotated the token of {installation.id}; "
        "the old token no longer works."
    )
    [(headers, body)] = plugin.mints
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert headers["content-type"] == "application/json"
    assert json.loads(body or b"") == {"installation_id": installation.id}
    rotation = plugin.activations[-1]
    assert (rotation["action"], rotation["installation_id"]) == ("rotate", installation.id)
    assert installation.token == rotation["token"] != old
    assert SECRET not in notice
    assert SECRET not in page
    assert SECRET not in caplog.text


async def test_mint_and_install_in_one_click(
    app: FakeCoreApp, plugin: PluginDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    page = await home(app)
    assert "<button>Mint a code and install</button>" in page
    notice, page = await act(app, "mint-install", {})
    [installation] = app.core.state.installations.values()
    assert notice == f"Minted an activation code at the plugin and installed {installation.id}."
    [(headers, body)] = plugin.mints
    assert headers == {"authorization": f"Bearer {SECRET}"}
    assert body is None
    assert plugin.activations[-1]["action"] == "activate"
    assert plugin.codes == {}  # the minted code was the one used
    assert f"Schedule ({installation.id})" in page
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            (401, b'{"code":"unauthorized"}'),
            f"The plugin at {ORIGIN} refused the operator secret (status 401, code unauthorized);"
            " check FAKE_CORE_PLUGIN_ADMIN_SECRET.",
        ),
        (
            (201, b"<html>not json</html>"),
            f"The plugin at {ORIGIN} answered 201 without an activation code.",
        ),
        (
            (201, b'{"code":"dwl_' + b"x" * 43 + b'"}'),
            f"The plugin at {ORIGIN} answered 201 without an activation code.",
        ),
        (
            (404, b'{"code":"installation_not_found"}'),
            f"The plugin at {ORIGIN} did not mint a code"
            " (status 404, code installation_not_found).",
        ),
        (
            (500, json.dumps({"code": SECRET}).encode()),  # an echo is blanked out
            f"The plugin at {ORIGIN} did not mint a code (status 500, code [secret]).",
        ),
        (
            httpx.ConnectError(f"cannot connect; Bearer {SECRET}"),
            f"Could not reach the plugin at {ORIGIN} to mint a code (ConnectError).",
        ),
    ],
)
async def test_a_failed_mint_is_a_plain_notice_and_changes_nothing(
    app: FakeCoreApp, plugin: PluginDouble, answer: tuple[int, bytes] | Exception, expected: str
) -> None:
    installation = await installed(app, plugin)
    old = installation.token
    if isinstance(answer, Exception):
        plugin.mint_raises = answer
    else:
        plugin.mint_answer = answer
    for action, form in (
        ("rotate-now", {"installation_id": installation.id}),
        ("mint-install", {}),
    ):
        notice, _ = await act(app, action, form)
        assert notice == expected
    assert installation.token == old
    assert list(app.core.state.installations) == [installation.id]


async def test_a_wrong_secret_is_refused_by_the_plugin_and_not_shown(
    core: FakeCore, plugin: PluginDouble
) -> None:
    wrong = "wrong-" + secrets.token_urlsafe(16)
    app = FakeCoreApp(core, plugin_origin=ORIGIN, plugin_caller=plugin, plugin_admin_secret=wrong)
    notice, page = await act(app, "mint-install", {})
    assert "refused the operator secret (status 401, code unauthorized)" in notice
    assert wrong not in page
    assert wrong not in notice
    assert plugin.mints[0][0]["authorization"] == f"Bearer {wrong}"


async def test_without_the_secret_there_is_no_one_click(
    core: FakeCore, plugin: PluginDouble
) -> None:
    app = FakeCoreApp(core, plugin_origin=ORIGIN, plugin_caller=plugin)
    installation = await installed(app, plugin)
    page = await home(app)
    assert "Rotate with code" in page
    assert "Rotate token" not in page
    assert "Mint a code and install" not in page
    notice, _ = await act(app, "rotate-now", {"installation_id": installation.id})
    assert "FAKE_CORE_PLUGIN_ADMIN_SECRET" in notice
    assert plugin.mints == []


async def test_one_click_rotate_sends_the_secret_only_to_its_own_plugin(
    app: FakeCoreApp, core: FakeCore, plugin: PluginDouble
) -> None:
    other = core.register_installation("https://other.example")
    page = await home(app)
    assert "Rotate token" not in page  # the only installation is another plugin's
    notice, _ = await act(app, "rotate-now", {"installation_id": other.id})
    assert notice.startswith(f"One-click rotation only talks to the plugin at {ORIGIN}")
    assert plugin.mints == []


async def test_admin_caller_is_used_for_the_mint(core: FakeCore, plugin: PluginDouble) -> None:
    seen: list[str] = []

    async def operator(
        method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        seen.append(url)
        return await plugin(method, url, headers, body)

    app = FakeCoreApp(
        core,
        plugin_origin=ORIGIN,
        plugin_caller=plugin,
        plugin_admin_secret=SECRET,
        admin_caller=operator,
    )
    await act(app, "mint-install", {})
    assert seen == [f"{ORIGIN}/admin/activation-codes"]
    assert len(core.state.installations) == 1


async def test_every_ui_post_is_same_origin_only(app: FakeCoreApp, plugin: PluginDouble) -> None:
    installation = await installed(app, plugin)
    old = installation.token
    code = plugin.mint(installation.id)
    for action, form in (
        ("rotate", {"installation_id": installation.id, "code": code}),
        ("rotate-now", {"installation_id": installation.id}),
        ("mint-install", {}),
    ):
        reply = await post(app, action, form, origin="https://evil.example")
        assert (reply.status, reply.code) == (403, "cross_origin_form")
    assert installation.token == old
    assert plugin.mints == []
    assert code in plugin.codes
    assert len(app.core.state.installations) == 1


async def test_uninstall_and_edit_of_unknown_ids_are_plain_notices(app: FakeCoreApp) -> None:
    gone, _ = await act(app, "uninstall", {"installation_id": "ins_gone"})
    assert gone == "There is no installation ins_gone."
    unknown, _ = await act(app, "edit", {"content_id": "cnt_gone"})
    assert unknown == "There is no content cnt_gone."


# -- the log of transitions -------------------------------------------------------------


async def test_the_log_shows_an_applied_publish_then_a_stale_refusal_after_an_edit(
    app: FakeCoreApp, core: FakeCore, plugin: PluginDouble
) -> None:
    installation = await installed(app, plugin)
    assert "No transition command received yet." in await home(app)
    page_command = transition_command(core, installation, "cnt_page", "publish")
    assert await send(core, *page_command) == (200, "transition_applied")
    pinned = core.state.groups["cnt_en"].current_version_id
    core.clock.advance(60_000)
    headers, body = transition_command(core, installation, "cnt_en", "publish", schedule_id="sch_2")

    notice, page = await act(app, "edit", {"content_id": "cnt_en"})
    assert "A schedule pinned to an older version will be refused as stale." in notice
    assert "A schedule pinned to an older version will be refused as stale" in page
    assert await send(core, headers, body) == (409, "scheduled_target_stale")
    core.clock.advance(1_000)
    assert await send(core, *page_command) == (200, "idempotent_replay")
    await act(app, "rotate-now", {"installation_id": installation.id})  # old token retired

    rows, stale = log_rows(await home(app)), "409 scheduled_target_stale"
    assert [row[:4] + row[5:7] for row in rows] == [
        ["1 Jul 2026, 09:01:01", "cnt_page", "About", "publish", "200 idempotent_replay", "no"],
        ["1 Jul 2026, 09:01:00", "cnt_en", "Spring launch", "publish", stale, "no"],
        ["1 Jul 2026, 09:00:00", "cnt_page", "About", "publish", "200 transition_applied", "yes"],
    ]
    page_version = page_command[1]["version_id"]
    assert [row[4] for row in rows] == [page_version, pinned, page_version]
    assert [row[7] for row in rows] == [installation.id] * 3
    assert pinned != core.state.groups["cnt_en"].current_version_id


async def refused_commands(core: FakeCore, installation: Installation, count: int) -> None:
    for n in range(count):  # a second apart, each a 422 that applies nothing
        core.clock.advance(1_000)
        headers, body = transition_command(core, installation, schedule_id=f"sch_{n}")
        await send(core, headers, {**body, "to": "draft"})


async def test_the_log_is_capped_newest_first(app: FakeCoreApp, core: FakeCore) -> None:
    installation = core.register_installation(ORIGIN)
    await refused_commands(core, installation, LOG_LIMIT + 5)
    page = await home(app)
    rows = log_rows(page)
    assert len(rows) == LOG_LIMIT
    assert rows[0][0] == "1 Jul 2026, 09:00:55"
    assert rows[-1][0] == "1 Jul 2026, 09:00:06"
    assert rows[0][5] == "422 transition_unavailable"
    assert f"(the last {LOG_LIMIT} of {LOG_LIMIT + 5} kept)" in page


async def test_the_log_escapes_what_it_shows(app: FakeCoreApp, core: FakeCore) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    core.state.add_content("cnt_evil", hostile)
    installation = core.register_installation(ORIGIN)
    headers, body = transition_command(core, installation, "cnt_evil", "publish")
    assert await send(core, headers, body) == (200, "transition_applied")
    headers, body = transition_command(core, installation, "cnt_evil", schedule_id="sch_9")
    refused = await send(core, headers, {**body, "kind": "<script>x</script>"})
    assert refused == (400, "invalid_request")
    page = await home(app)
    assert "<img" not in page
    assert "<script" not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page  # markupsafe quotes
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    newest, oldest = log_rows(page)
    shown = (newest[2], newest[3], newest[5])
    assert shown == (hostile, "<script>x</script>", "400 invalid_request")
    assert (oldest[2], oldest[5], oldest[6]) == (hostile, "200 transition_applied", "yes")


async def test_the_log_says_when_there_was_no_answer(app: FakeCoreApp, core: FakeCore) -> None:
    installation = core.register_installation(ORIGIN)
    core.faults.push(Fault.apply_then_drop())
    core.faults.push(Fault.respond(503, "unavailable"))
    headers, body = transition_command(core, installation)
    with pytest.raises(TransportError):
        await send(core, headers, body)
    headers, body = transition_command(core, installation, "cnt_pub", "unpublish", schedule_id="s2")
    assert await send(core, headers, body) == (503, "unavailable")
    faked, dropped = log_rows(await home(app))
    assert (faked[5], faked[6]) == ("503 unavailable (injected respond fault; not processed)", "no")
    assert (dropped[5], dropped[6]) == ("no answer (connection dropped after processing)", "yes")


async def test_the_log_is_kept_across_a_restart(tmp_path: Path, core: FakeCore) -> None:
    state_file = StateFile(tmp_path / "fake_core.json")
    app = FakeCoreApp(core, plugin_origin=ORIGIN, state_file=state_file)
    installation = core.register_installation(ORIGIN)
    assert await send(core, *transition_command(core, installation)) == (200, "transition_applied")
    core.clock.advance(1_000)
    headers, body = transition_command(core, installation, "cnt_pub", "unpublish", schedule_id="s2")
    stale = await send(core, headers, {**body, "version_id": "ver_0"})
    assert stale == (409, "scheduled_target_stale")
    await app.dispatch("GET", "/__fake/state", {}, b"")  # any request saves what changed
    before = log_rows(await home(app))
    assert [row[5] for row in before] == ["409 scheduled_target_stale", "200 transition_applied"]

    loaded = StateFile(tmp_path / "fake_core.json").load()  # the next start
    assert loaded is not None
    restarted = FakeCore(core.base_url, clock=lambda: T0)
    restarted.state = loaded
    after = log_rows(await home(FakeCoreApp(restarted, plugin_origin=ORIGIN)))
    assert after == before
    assert restarted.calls.calls == [], "the call record itself starts afresh"
    saved = (tmp_path / "fake_core.json").read_text()
    assert installation.token not in saved.split('"received"', 1)[1], "the log holds no token"


async def test_the_log_keeps_the_last_200_commands(tmp_path: Path, core: FakeCore) -> None:
    installation = core.register_installation(ORIGIN)
    await refused_commands(core, installation, RECEIVED_LIMIT + 5)
    assert len(core.state.received) == RECEIVED_LIMIT
    oldest = core.state.received[0]
    assert rfc3339(oldest.at_ms) == "2026-07-01T09:00:06Z", "the first five made way"
    StateFile(tmp_path / "fake_core.json").save(core.state)
    saved = json.loads((tmp_path / "fake_core.json").read_text())
    assert len(saved["received"]) == RECEIVED_LIMIT
    page = await home(FakeCoreApp(core, plugin_origin=ORIGIN))
    assert f"(the last {LOG_LIMIT} of {RECEIVED_LIMIT} kept)" in page


# -- Manage is a site admin's -----------------------------------------------------------


def manage_section(page: str) -> str:
    after = page.split('<h2 id="manage">Manage</h2>', 1)[1]
    return after.split('<h2 id="content">Content</h2>', 1)[0]


async def test_manage_is_offered_to_site_admins_only(app: FakeCoreApp, core: FakeCore) -> None:
    installation = core.register_installation(ORIGIN)
    core.state.add_person("usr_boss", "Grace Admin", set(), role="admin")
    page = await home(app)
    offered = re.findall(r'<option value="([^"]+)">', manage_section(page))
    assert offered == ["usr_editor", "usr_boss"], "the sample's admin, then the new one"
    assert "Dee Wan offers the Manage launch to site admins only." in page
    content = page.split('<h2 id="content">Content</h2>', 1)[1]
    assert "usr_viewer" in content, "anyone may be launched on a content item"

    # A post for someone else (as a crafted form would) is refused, and issues nothing.
    form = {"installation_id": installation.id, "person_id": "usr_viewer"}
    notice, _ = await act(app, "launch", form)
    assert notice == "Refused: only a site admin is offered the Manage launch, not usr_viewer."
    assert core.state.launches == {}
    reply = await post(app, "launch", {**form, "person_id": "usr_boss"}, origin=f"http://{HOST}")
    assert reply.status == 303
    assert reply.headers["location"].startswith(f"{ORIGIN}/installations/{installation.id}?")


async def test_without_a_site_admin_no_one_is_offered_manage(
    app: FakeCoreApp, core: FakeCore
) -> None:
    core.register_installation(ORIGIN)
    core.state.persons["usr_editor"].role = "editor"
    section = manage_section(await home(app))
    assert "Nobody on this site is a site admin, so no one is offered Manage." in section
    assert "<form" not in section


# -- run the tick now -------------------------------------------------------------------

TICK_URL = f"{ORIGIN}/__scheduled?cron=*+*+*+*+*"
REPORT = {"due": 0, "claimed": 0, "batches": 0, "sends": 0, "completed": 0, "refused": 0,
          "retrying": 0, "refused_unsent": 0, "refused_unsent_late": 0}  # fmt: skip


class TickDouble:
    """The plugin's development trigger: records each call, answers what it is told."""

    def __init__(self, status: int = 200, body: Any = None) -> None:
        self.status = status
        self.body = {"code": "tick_finished", "report": REPORT} if body is None else body
        self.calls: list[tuple[str, str, dict[str, str], bytes | None]] = []
        self.raises = body if isinstance(body, Exception) else None

    async def __call__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        self.calls.append((method, url, headers, body))
        if self.raises is not None:
            raise self.raises
        raw = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return self.status, JSON, raw


def tick_app(core: FakeCore, plugin: PluginDouble, tick: TickDouble) -> FakeCoreApp:
    return FakeCoreApp(
        core, plugin_origin=ORIGIN, plugin_caller=plugin, plugin_tick_url=TICK_URL,
        tick_caller=tick,
    )  # fmt: skip


async def test_the_tick_button_is_there_only_when_the_trigger_is_known(
    app: FakeCoreApp, core: FakeCore, plugin: PluginDouble
) -> None:
    assert "Run the tick now" not in await home(app)
    notice, _ = await act(app, "tick", {})
    assert notice == (
        "This local Dee Wan was not told where the plugin's tick trigger is "
        "(start it with --plugin-tick-url)."
    )
    tick = TickDouble()
    page = await home(tick_app(core, plugin, tick))
    assert '<form method="post" action="/ui/tick"><button>Run the tick now</button></form>' in page
    assert tick.calls == []


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({}, "The plugin ran a tick: nothing was due, so nothing was sent."),
        (
            {"sends": 1, "completed": 1},
            "The plugin ran a tick: 1 command sent (1 completed, 0 refused, 0 to be tried "
            "again). See Transitions received below.",
        ),
        (
            {"sends": 3, "completed": 1, "refused": 1, "retrying": 1, "refused_unsent_late": 2},
            "The plugin ran a tick: 3 commands sent (1 completed, 1 refused, 1 to be tried "
            "again); 2 ended without being sent (too late, or the token is unreadable). "
            "See Transitions received below.",
        ),
        (
            {"refused_unsent": 1},
            "The plugin ran a tick: 0 commands sent; 1 ended without being sent (too late, "
            "or the token is unreadable).",
        ),
    ],
)
async def test_the_tick_button_says_what_was_sent(
    core: FakeCore, plugin: PluginDouble, counts: dict[str, int], expected: str
) -> None:
    tick = TickDouble(body={"code": "tick_finished", "report": {**REPORT, **counts}})
    notice, _ = await act(tick_app(core, plugin, tick), "tick", {})
    assert notice == expected
    [(method, url, headers, body)] = tick.calls
    assert (method, url, body) == ("POST", TICK_URL, None)
    assert "authorization" not in {name.lower() for name in headers}, "no secret goes there"


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            404,
            {"code": "not_found"},
            f"The plugin at {ORIGIN} did not run a tick (it runs one only with "
            "ENVIRONMENT=development): status 404, code not_found.",
        ),
        (
            403,
            {"code": "host_not_allowed"},
            f"The plugin at {ORIGIN} did not run a tick: status 403, code host_not_allowed.",
        ),
        (500, b"<html>oops</html>", f"The plugin at {ORIGIN} did not run a tick: status 500."),
        (
            200,
            {"code": "tick_finished", "report": {**REPORT, "sends": "many"}},
            f"The plugin at {ORIGIN} answered 200 without a tick report.",
        ),
        (
            200,
            {"code": "tick_finished"},
            f"The plugin at {ORIGIN} answered 200 without a tick report.",
        ),
        (
            200,
            httpx.ConnectError("connection refused"),
            f"Could not reach the plugin at {ORIGIN} to run a tick (ConnectError).",
        ),
    ],
)
async def test_a_tick_that_did_not_run_is_a_plain_notice(
    core: FakeCore, plugin: PluginDouble, status: int, body: Any, expected: str
) -> None:
    notice, _ = await act(tick_app(core, plugin, TickDouble(status, body)), "tick", {})
    assert notice == expected


async def test_the_tick_button_is_same_origin_only(core: FakeCore, plugin: PluginDouble) -> None:
    tick = TickDouble()
    reply = await post(tick_app(core, plugin, tick), "tick", {}, origin="https://evil.example")
    assert (reply.status, reply.code) == (403, "cross_origin_form")
    assert tick.calls == []


async def test_the_tick_button_runs_the_real_plugins_tick(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """The plugin's own trigger (its local runtime's `/__scheduled`), in process: a schedule
    made through the plugin's form falls due, the button runs the tick, the notice counts it
    and the log shows Dee Wan's answer."""
    world = World(db, clock, env=base_env(ENVIRONMENT="development"))
    installation = await world.install()
    editor = await world.browser_for(installation)
    await editor.get(f"/installations/{installation.id}")
    local = datetime.fromtimestamp((clock.now_ms() + 120_000) / 1000, UTC)
    made = await editor.post(
        f"/installations/{installation.id}/schedules",
        {
            "csrf_token": editor.csrf(),
            **editor.pins,
            "transition": "publish:published",
            "local_time": local.strftime("%Y-%m-%dT%H:%M"),
            "timezone": "UTC",
        },
    )
    assert made.status == 303, made.body[:300]
    clock.advance(180_000)  # the fake core follows the same clock

    async def tick(when: int | None) -> dict[str, int]:
        return await world.app.tick(when if when is not None else clock.now_ms())

    transport = httpx.ASGITransport(app=AsgiApp(world.app, tick))
    async with httpx.AsyncClient(transport=transport) as client:
        app = FakeCoreApp(
            world.core, plugin_origin=APP_ORIGIN, plugin_tick_url=f"{APP_ORIGIN}/__scheduled"
            "?cron=*+*+*+*+*", tick_caller=httpx_caller(client),
        )  # fmt: skip
        notice, page = await act(app, "tick", {})
    assert notice == (
        "The plugin ran a tick: 1 command sent (1 completed, 0 refused, 0 to be tried again). "
        "See Transitions received below."
    )
    [row] = log_rows(page)
    expected = ["cnt_en", "200 transition_applied", "yes", installation.id]
    assert [row[1], row[5], row[6], row[7]] == expected


# -- the command line -------------------------------------------------------------------


def test_cli_reads_the_secret_from_the_environment_and_never_prints_it() -> None:
    root = Path(__file__).resolve().parent.parent
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: the mint cannot connect
    command = [sys.executable, "-m", "fake_core", "--port", "0", "--plugin-origin", closed]
    env = {"PATH": "/usr/bin:/bin", "FAKE_CORE_PLUGIN_ADMIN_SECRET": SECRET}
    with subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            port = int(line.split("127.0.0.1:")[1].split()[0])
            base = f"http://127.0.0.1:{port}"
            page = httpx.get(f"{base}/").text
            assert "<button>Mint a code and install</button>" in page
            answer = httpx.post(f"{base}/ui/mint-install", data={})
            assert answer.status_code == 303
            page = httpx.get(f"{base}/").text
            assert f"Could not reach the plugin at {closed} to mint a code (ConnectError)." in page
            assert SECRET not in page
        finally:
            process.terminate()
            out, err = process.communicate(timeout=5)
    assert SECRET not in line + out + err
