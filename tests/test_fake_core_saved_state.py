"""fake_core keeps its state in a file (`--state FILE`): what was made survives a restart.

A restarted core must answer the plugin as the old one would have: the same
installation token, the delegations of open sessions, the idempotency memory,
the content versions, and new versions that do not reuse an old number.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from fake_core import FakeCore, parse_rfc3339
from fake_core.app import FakeCoreApp
from fake_core.saved_state import StateFile, StateFileError, state_from_json, state_to_json
from fake_core.testing import (
    CODE,
    ORIGIN,
    FakePlugin,
    encode,
    manifest,
    sample_core,
    transition_command,
)

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0
API = "/api/plugins/v1"
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Used:
    core: FakeCore
    installation_id: str
    delegation: str  # from the launch exchange
    applied: tuple[dict[str, str], dict[str, Any]]  # a transition command, as sent


async def used_core() -> Used:
    """A core that has seen a bit of everything: install, launch, exchange, a transition."""
    core = sample_core(T0)
    core.plugin_caller = FakePlugin(manifest())
    installation = await core.install(ORIGIN, CODE, models={"article"})
    launch = core.issue_launch(
        installation.id, "usr_editor", {"kind": "content", "content_id": "cnt_en"}
    )
    auth = {"Authorization": f"Bearer {installation.token}", "Content-Type": "application/json"}
    status, _, body = await core.handle(
        "POST", f"{API}/launch/exchange", auth, encode({"code": launch.code})
    )
    assert status == 200
    core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})  # left unused
    headers, command = transition_command(core, installation)
    status, _, _ = await core.handle("POST", f"{API}/transitions", headers, encode(command))
    assert status == 200
    core.state.edit("cnt_page")
    core.state.publish_now("cnt_page", T0)
    delegation = json.loads(body)["delegation"]["token"]
    return Used(core, installation.id, delegation, (headers, command))


def restarted(core: FakeCore) -> FakeCore:
    """A new core on the state the old one saved (through JSON text, as on disk)."""
    fresh = FakeCore(core.base_url, clock=lambda: T0)
    fresh.state = state_from_json(json.loads(json.dumps(state_to_json(core.state))))
    return fresh


async def test_a_restarted_core_answers_the_plugin_as_before() -> None:
    used = await used_core()
    core, fresh = used.core, restarted(used.core)
    installation = fresh.state.installations[used.installation_id]
    assert installation.base_url == core.base_url
    assert installation.manifest == manifest()
    auth = {"Authorization": f"Bearer {installation.token}", "Dee-Wan-Delegation": used.delegation}

    # The token and the open session's delegation still work; the models granted still bind.
    status, _, body = await fresh.handle("GET", f"{API}/content/cnt_en", auth, None)
    assert (status, json.loads(body)["content"]["current_version_id"]) == (
        200,
        core.state.groups["cnt_en"].current_version_id,
    )
    status, _, body = await fresh.handle("GET", f"{API}/content/cnt_page", auth, None)
    assert (status, json.loads(body)["code"]) == (403, "capability_refused")

    # The command already applied is remembered, not applied again.
    headers, command = used.applied
    status, _, body = await fresh.handle("POST", f"{API}/transitions", headers, encode(command))
    assert (status, json.loads(body)["code"]) == (200, "idempotent_replay")
    assert len(fresh.state.log) == len(core.state.log)


async def test_logs_and_versions_carry_on() -> None:
    core = (await used_core()).core
    fresh = restarted(core)
    for primary_id, group in fresh.state.groups.items():
        old = core.state.groups[primary_id]
        assert (group.versions, group.revision, group.log) == (old.versions, old.revision, old.log)
        # A group's log is part of the core's log, the same entries.
        assert all(any(entry is seen for seen in fresh.state.log) for entry in group.log)
    every_version = {v for group in fresh.state.groups.values() for v in group.versions}
    assert fresh.state.edit("cnt_en") not in every_version
    assert fresh.state.launches.keys() == core.state.launches.keys()


async def test_the_file_is_private_whole_and_written_only_on_change(tmp_path: Path) -> None:
    core = (await used_core()).core
    path = tmp_path / "deeper" / "fake_core.json"
    state_file = StateFile(path)
    assert state_file.load() is None  # no file yet
    state_file.save(core.state)
    assert path.stat().st_mode & 0o777 == 0o600, "it holds installation tokens"
    written = path.stat().st_ino
    state_file.save(core.state)
    assert path.stat().st_ino == written, "nothing changed, nothing written"
    core.state.edit("cnt_en")
    state_file.save(core.state)
    assert path.stat().st_ino != written, "a new file renamed over the old one"
    assert [p.name for p in path.parent.iterdir()] == ["fake_core.json"]

    loaded = StateFile(path).load()
    assert loaded is not None
    assert state_to_json(loaded) == state_to_json(core.state)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"format": 99}', '{"format": 1, "site": {}}'])
def test_a_file_it_did_not_write_is_refused_in_plain_words(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fake_core.json"
    path.write_text(text)
    with pytest.raises(StateFileError, match="delete it to start anew") as refused:
        StateFile(path).load()
    assert str(path) in str(refused.value)


async def test_the_server_saves_after_a_change_and_only_then(tmp_path: Path) -> None:
    path = tmp_path / "fake_core.json"
    core = sample_core(T0)
    state_file = StateFile(path)
    state_file.save(core.state)  # as `python -m fake_core` does at start
    written = path.stat().st_ino
    app = FakeCoreApp(core, state_file=state_file)
    await app.dispatch("GET", "/__fake/state", {}, b"")
    await app.dispatch("GET", "/", {}, b"")
    assert path.stat().st_ino == written, "a read changes nothing"
    edit = json.dumps({"content_id": "cnt_en", "action": "edit"}).encode()
    reply = await app.dispatch("POST", "/__fake/content", {}, edit)
    assert reply.status == 200
    saved: dict[str, Any] = json.loads(path.read_text())
    [group] = [g for g in saved["groups"] if g["primary_id"] == "cnt_en"]
    assert group["current_version_id"] == core.state.groups["cnt_en"].current_version_id


def start(state: Path) -> tuple[subprocess.Popen[str], str, str]:
    """`python -m fake_core --seed demo --state FILE`; the process, its first line, its URL."""
    command = [sys.executable, "-m", "fake_core", "--port", "0", "--seed", "demo"]
    process = subprocess.Popen(
        [*command, "--state", str(state)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(10)
        return process, line, ""
    port = int(line.split("127.0.0.1:")[1].split()[0])
    return process, line, f"http://127.0.0.1:{port}"


def stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    _, err = process.communicate(timeout=10)
    return err


def test_the_command_loads_what_the_last_run_left(tmp_path: Path) -> None:
    path = tmp_path / "fake_core.json"
    process, line, url = start(path)
    try:
        assert line.rstrip().endswith(f"state in {path}"), line
        assert path.exists(), "the file exists from the start"
        changed = httpx.post(
            f"{url}/__fake/content", json={"content_id": "cnt_news", "action": "edit"}
        ).json()
        [news] = [g for g in changed["state"]["groups"] if g["primary_id"] == "cnt_news"]
    finally:
        stop(process)

    process, line, url = start(path)
    try:
        assert line.rstrip().endswith(f"state in {path} (as it was left)"), line
        state = httpx.get(f"{url}/__fake/state").json()
        [again] = [g for g in state["groups"] if g["primary_id"] == "cnt_news"]
        assert again["versions"] == news["versions"]
        assert len({c["id"] for c in state["contents"]}) == len(state["contents"]), "seeded once"
    finally:
        stop(process)


def test_the_command_refuses_a_broken_file_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "fake_core.json"
    path.write_text("{broken")
    process, line, _ = start(path)
    err = stop(process) if process.poll() is None else process.communicate(timeout=10)[1]
    assert process.returncode == 1
    assert line == ""
    assert f"python -m fake_core: {path} is not a state this fake core saved" in err
    assert "Traceback" not in err
    assert path.read_text() == "{broken", "left as it was"


async def test_roles_and_the_log_of_commands_received_are_kept() -> None:
    used = await used_core()
    used.core.state.add_person("usr_boss", "Boss", set(), role="admin")
    fresh = restarted(used.core)
    roles = {p.id: p.role for p in fresh.state.persons.values()}
    assert roles == {
        "usr_editor": "admin",
        "usr_viewer": "viewer",
        "usr_blind": "editor",
        "usr_boss": "admin",
    }
    assert fresh.state.received == used.core.state.received
    assert [entry.answer for entry in fresh.state.received] == ["200 transition_applied"]


async def test_a_file_from_before_roles_still_loads(tmp_path: Path) -> None:
    """Format 1 had no roles and no log: a developer's `.wrangler/dev/fake_core.json` of
    then keeps its installations; whoever may publish is an editor, the others viewers."""
    saved = state_to_json((await used_core()).core.state)
    del saved["received"]
    for person in saved["persons"]:
        del person["role"]
    path = tmp_path / "fake_core.json"
    path.write_text(json.dumps({**saved, "format": 1}))
    loaded = StateFile(path).load()
    assert loaded is not None
    roles = {p.id: p.role for p in loaded.persons.values()}
    assert roles == {"usr_editor": "editor", "usr_viewer": "viewer", "usr_blind": "editor"}
    assert loaded.received == []
    assert loaded.installations.keys() == {i["id"] for i in saved["installations"]}
    StateFile(path).save(loaded)
    assert json.loads(path.read_text())["format"] == 2, "saved anew in today's format"


def test_a_person_with_an_unknown_role_is_refused(tmp_path: Path) -> None:
    saved = state_to_json(sample_core(T0).state)
    saved["persons"][0]["role"] = "owner"
    path = tmp_path / "fake_core.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(StateFileError, match="delete it to start anew"):
        StateFile(path).load()
