"""fake_core's home page as a person uses it: rotate, one-click codes, the transitions log.

Driven in-process through `FakeCoreApp.dispatch` (forms posted like a browser
would), with a plugin double that mints one-time codes behind an operator
secret and accepts each code once, for its own kind and installation.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from fake_core import FakeCore, Fault, Installation, parse_rfc3339
from fake_core.app import FakeCoreApp
from fake_core.home import LOG_LIMIT
from fake_core.testing import ORIGIN, encode, manifest, sample_core, transition_command
from fake_core.wire import Reply
from scheduling.ports import TransportError

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
    log = page.split("<h2>Transitions received</h2>", 1)[1]
    return [
        [unescape(cell) for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", log, re.S)
        if "<td>" in row
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
    ],
)
async def test_a_failed_mint_is_a_plain_notice_and_changes_nothing(
    app: FakeCoreApp, plugin: PluginDouble, answer: tuple[int, bytes], expected: str
) -> None:
    installation = await installed(app, plugin)
    old = installation.token
    plugin.mint_answer = answer
    for action, form in (
        ("rotate-now", {"installation_id": installation.id}),
        ("mint-install", {}),
    ):
        notice, _ = await act(app, action, form)
        assert notice == expected
    assert installation.token == old
    assert list(app.core.state.installations) == [installation.id]


async def test_an_unreachable_plugin_is_a_plain_notice(
    app: FakeCoreApp, plugin: PluginDouble
) -> None:
    plugin.mint_raises = httpx.ConnectError(f"cannot connect; Bearer {SECRET}")
    notice, _ = await act(app, "mint-install", {})
    assert notice == f"Could not reach the plugin at {ORIGIN} to mint a code (ConnectError)."
    assert app.core.state.installations == {}


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
    assert (await act(app, "uninstall", {"installation_id": "ins_gone"}))[0] == (
        "There is no installation ins_gone."
    )
    assert (await act(app, "edit", {"content_id": "cnt_gone"}))[
        0
    ] == "There is no content cnt_gone."


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

    rows = log_rows(await home(app))
    assert rows == [
        [
            "2026-07-01T09:01:01Z",
            "cnt_page",
            "About",
            "publish",
            page_command[1]["version_id"],
            "200 idempotent_replay",
            "no",
            installation.id,
        ],
        [
            "2026-07-01T09:01:00Z",
            "cnt_en",
            "Spring launch",
            "publish",
            pinned,
            "409 scheduled_target_stale",
            "no",
            installation.id,
        ],
        [
            "2026-07-01T09:00:00Z",
            "cnt_page",
            "About",
            "publish",
            page_command[1]["version_id"],
            "200 transition_applied",
            "yes",
            installation.id,
        ],
    ]
    assert pinned != core.state.groups["cnt_en"].current_version_id


async def test_the_log_is_capped_newest_first(app: FakeCoreApp, core: FakeCore) -> None:
    installation = core.register_installation(ORIGIN)
    for n in range(LOG_LIMIT + 5):
        core.clock.advance(1_000)
        headers, body = transition_command(core, installation, schedule_id=f"sch_{n}")
        await send(core, headers, {**body, "to": "draft"})  # 422, nothing applied
    page = await home(app)
    rows = log_rows(page)
    assert len(rows) == LOG_LIMIT
    assert rows[0][0] == "2026-07-01T09:00:55Z"
    assert rows[-1][0] == "2026-07-01T09:00:06Z"
    assert rows[0][5] == "422 transition_unavailable"
    assert f"(the last {LOG_LIMIT} of {LOG_LIMIT + 5})" in page


async def test_the_log_escapes_what_it_shows(app: FakeCoreApp, core: FakeCore) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    core.state.add_content("cnt_evil", hostile)
    installation = core.register_installation(ORIGIN)
    headers, body = transition_command(core, installation, "cnt_evil", "publish")
    assert await send(core, headers, body) == (200, "transition_applied")
    headers, body = transition_command(core, installation, "cnt_evil", schedule_id="sch_9")
    assert await send(core, headers, {**body, "kind": "<script>x</script>"}) == (
        400,
        "invalid_request",
    )
    page = await home(app)
    assert "<img" not in page
    assert "<script" not in page
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page  # markupsafe quotes
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    newest, oldest = log_rows(page)
    assert (newest[2], newest[3], newest[5]) == (
        hostile,
        "<script>x</script>",
        "400 invalid_request",
    )
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


# -- the command line -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
