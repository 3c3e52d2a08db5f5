"""fake_core's install flow (core → plugin): manifest check, activate, rotate, uninstall."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_core import FakeCore, InstallError, parse_rfc3339
from fake_core.testing import CODE, ORIGIN, FakePlugin, manifest, sample_core

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0


@pytest.fixture
def plugin() -> FakePlugin:
    return FakePlugin(manifest())


@pytest.fixture
def core(plugin: FakePlugin) -> FakeCore:
    core = sample_core(T0)
    core.plugin_caller = plugin
    return core


async def status_of_exchange(core: FakeCore, token: str, installation_id: str) -> int:
    launch = core.issue_launch(installation_id, "usr_editor", {"kind": "manage"})
    status, _, _ = await core.handle(
        "POST",
        "/api/plugins/v1/launch/exchange",
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        json.dumps({"code": launch.code}).encode(),
    )
    return status


async def test_activate_keeps_the_installation_on_201_activated(
    core: FakeCore, plugin: FakePlugin
) -> None:
    ins = await core.install(ORIGIN, CODE, models={"article"})
    [sent] = plugin.received
    assert sent["action"] == "activate"
    assert (sent["installation_id"], sent["token"], sent["site_id"]) == (
        ins.id,
        ins.token,
        core.state.site.id,
    )
    assert core.state.installations[ins.id].models == frozenset({"article"})
    assert ins.capabilities == frozenset(manifest()["capabilities"])
    assert await status_of_exchange(core, ins.token, ins.id) == 200
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "content", "content_id": "cnt_en"})
    assert launch.url == f"{ORIGIN}/installations/{ins.id}?dee_wan_launch={launch.code}"


@pytest.mark.parametrize(
    "answer", [(401, "invalid_code"), (200, "activated"), (201, "rotated"), (500, "activated")]
)
async def test_activate_keeps_nothing_unless_exactly_201_activated(
    core: FakeCore, plugin: FakePlugin, answer: tuple[int, str]
) -> None:
    plugin.answers = [answer]
    with pytest.raises(InstallError) as caught:
        await core.install(ORIGIN, CODE)
    assert caught.value.status == answer[0]
    assert core.state.installations == {}
    token = plugin.received[0]["token"]
    status, _, _ = await core.handle(
        "GET", "/api/plugins/v1/content/cnt_en", {"Authorization": f"Bearer {token}"}, None
    )
    assert status == 401


@pytest.mark.parametrize(
    "bad",
    [
        manifest(manifest_version=2),
        manifest(protocol="v2"),
        manifest(origin="https://other.example"),
        manifest(activation_url="https://other.example/dee-wan/activate"),
        manifest(capabilities=["content:read", "content:delete"]),
        manifest(launches=[]),
        manifest(launches=[{"kind": "content", "url": f"{ORIGIN}/installations/fixed"}]),
    ],
)
async def test_off_contract_manifest_is_refused_before_activation(
    core: FakeCore, plugin: FakePlugin, bad: dict[str, Any]
) -> None:
    plugin.manifest = bad
    with pytest.raises(InstallError):
        await core.install(ORIGIN, CODE)
    assert plugin.received == []


async def test_capabilities_granted_must_be_offered(core: FakeCore, plugin: FakePlugin) -> None:
    plugin.manifest = manifest(capabilities=["content:read", "workflow:publish"])
    with pytest.raises(InstallError):
        await core.install(ORIGIN, CODE, capabilities={"workflow:unpublish"})
    ins = await core.install(ORIGIN, CODE, capabilities={"content:read"})
    assert ins.capabilities == frozenset({"content:read"})


async def test_rotate_switches_tokens_only_when_rotated(core: FakeCore, plugin: FakePlugin) -> None:
    ins = await core.install(ORIGIN, CODE)
    old = ins.token
    plugin.answers = [(401, "invalid_code")]
    with pytest.raises(InstallError):
        await core.rotate(ins.id, CODE)
    assert await status_of_exchange(core, old, ins.id) == 200

    await core.rotate(ins.id, CODE)
    sent = plugin.received[-1]
    assert sent["action"] == "rotate"
    assert sent["token"] == ins.token != old
    assert await status_of_exchange(core, old, ins.id) == 401
    assert await status_of_exchange(core, ins.token, ins.id) == 200


async def test_uninstall_revokes_the_token(core: FakeCore) -> None:
    ins = await core.install(ORIGIN, CODE)
    assert await status_of_exchange(core, ins.token, ins.id) == 200
    core.uninstall(ins.id)
    with pytest.raises(KeyError):
        core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    # Its token's 401 on every route: test_uninstalled_installation_is_unauthorized_everywhere.


@pytest.mark.parametrize(
    "context",
    [
        {"kind": "content"},
        {"kind": "content", "content_id": "cnt_gone"},
        {"kind": "manage", "content_id": "cnt_en"},
        {"kind": "other"},
    ],
)
async def test_launch_context_is_checked(core: FakeCore, context: dict[str, str]) -> None:
    ins = core.register_installation()
    with pytest.raises(ValueError, match="context"):
        core.issue_launch(ins.id, "usr_editor", context)
