"""The plugin's installation in the local Dee Wan: the one from the last run, or a new one.

The local Dee Wan keeps its state in the state dir and the plugin keeps its
database there, so a restart finds both sides of the last run's installation
and uses it again, with its token: its schedules stay on the plugin's pages
and keep working. To see that it can, a restart opens the installation once
as Dee Wan sends a person there (a content launch); nothing is minted or
rotated for that. The token is rotated only when the plugin cannot use the
one it holds (TOKEN_KEY changed since). An installation is new when there is
none for these origins, or when the plugin no longer holds it (its database
was deleted). The home page must offer only working buttons, so an
installation that cannot work any more is uninstalled, and the banner says
so: the one the plugin lost, and one made for the plugin or the local Dee Wan
on another port (`--plugin-port`, `--core-port`), which no one serves now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from scripts.devstack.errors import DevStackError

_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_ERROR_CODE = re.compile(r'data-error-code="([a-z_]{1,64})"')
LOST = "lost"  # the plugin does not hold the installation (its database was deleted)


@dataclass(frozen=True)
class Connected:
    installation: dict[str, Any]  # as the local Dee Wan's control API shows it
    reused: bool
    replaced: str | None = None  # the last run's installation, which the plugin no longer held
    retired: tuple[str, ...] = ()  # installations for ports no one serves now, said in words
    rotated: str | None = None  # why the token was rotated, when it had to be


@dataclass(frozen=True)
class Origins:
    plugin: str
    core: str
    admin_secret: str
    vars_hint: str  # where ADMIN_SECRET comes from, for the messages


def connect(origins: Origins) -> Connected:
    try:
        return _connect(origins)
    except httpx.HTTPError as exc:
        raise DevStackError(f"installing the plugin failed: {exc}") from None


def _connect(origins: Origins) -> Connected:
    state = _core_state(origins)
    active = [i for i in state["installations"] if not i["revoked"]]
    retired = []
    for installation in active:
        if _for_another_port(installation, origins):
            _uninstall(origins, installation["id"])
            retired.append(_retired(installation, origins))
    replaced = None
    last = _last_run(active, origins)
    if last is not None:
        problem = _launch_problem(origins, state, last["id"])
        if problem != LOST:
            rotated = None if problem is None else _rotate(origins, state, last["id"], problem)
            current = _installation(_core_state(origins), last["id"])
            return Connected(current, reused=True, retired=tuple(retired), rotated=rotated)
        _uninstall(origins, last["id"])
        replaced = last["id"]
    return Connected(_install(origins), reused=False, replaced=replaced, retired=tuple(retired))


def _core_state(origins: Origins) -> dict[str, Any]:
    state: dict[str, Any] = httpx.get(f"{origins.core}/__fake/state", timeout=10).json()
    return state


def _installation(state: dict[str, Any], installation_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(i for i in state["installations"] if i["id"] == installation_id)
    return found


def _last_run(installations: list[dict[str, Any]], origins: Origins) -> dict[str, Any] | None:
    """The newest active installation of this plugin that was told this core's URL."""
    usable = [
        i
        for i in installations
        if i["plugin_origin"] == origins.plugin and i["base_url"] == origins.core
    ]
    return usable[-1] if usable else None


def _for_another_port(installation: dict[str, Any], origins: Origins) -> bool:
    """Made by a run on other ports: its plugin, or the Dee Wan it calls, is on loopback
    where nothing of this run listens, so its buttons (or its calls) would fail."""
    plugin, core = installation["plugin_origin"], installation["base_url"]
    if core is None or not (_on_loopback(plugin) and _on_loopback(core)):
        return False  # installed by hand for somewhere else: not the dev stack's to judge
    return (plugin, core) != (origins.plugin, origins.core)


def _on_loopback(origin: str) -> bool:
    return urlsplit(origin).hostname in _LOOPBACK


def _retired(installation: dict[str, Any], origins: Origins) -> str:
    where = f"the plugin at {installation['plugin_origin']}"
    if installation["base_url"] != origins.core:
        where += f" and the local Dee Wan at {installation['base_url']}"
    return (
        f"{installation['id']} was for {where}, which this run does not serve: uninstalled "
        "(its waiting schedules will be refused)"
    )


def _launch_problem(origins: Origins, state: dict[str, Any], installation_id: str) -> str | None:
    """Open the installation as Dee Wan sends a person there: the plugin finds it in its
    database and trades the launch code with the token it holds. None when that works,
    LOST when the plugin does not hold the installation, else what went wrong.

    Nothing is minted and nothing rotated for this, so a restart leaves the token alone."""
    if not state["persons"] or not state["contents"]:
        # No one to launch: ask the plugin, as its operator, whether it holds the
        # installation (it mints a rotation code only then; unused, it expires).
        return LOST if _rotation_code(origins, installation_id) is None else None
    issued = httpx.post(
        f"{origins.core}/__fake/launch",
        json={
            "installation_id": installation_id,
            "person_id": state["persons"][0]["id"],
            "content_id": state["contents"][0]["id"],
        },
        timeout=10,
    )
    if issued.status_code != 200:
        raise DevStackError(f"the local Dee Wan could not issue a launch: {_answer(issued)}")
    opened = httpx.get(issued.json()["url"], timeout=10)
    if opened.status_code == 303:
        return None
    found = _ERROR_CODE.search(opened.text)
    code = found.group(1) if found else None
    if (opened.status_code, code) == (404, "installation_not_found"):
        return LOST
    return f"HTTP {opened.status_code}" + (f" {code}" if code else "")


def _rotate(origins: Origins, state: dict[str, Any], installation_id: str, problem: str) -> str:
    """Give the installation a new token, as the home page's "Rotate token" does; say why."""
    code = _rotation_code(origins, installation_id)
    if code is None:
        raise DevStackError(f"the plugin no longer holds {installation_id}; run again")
    rotated = httpx.post(
        f"{origins.core}/__fake/rotate",
        json={"installation_id": installation_id, "code": code},
        timeout=10,
    )
    if rotated.status_code != 200:
        raise DevStackError(
            f"the local Dee Wan could not rotate the token of {installation_id}: {_answer(rotated)}"
        )
    still = _launch_problem(origins, state, installation_id)
    if still is not None:
        raise DevStackError(
            f"the plugin cannot open {installation_id} even with a new token: {still}"
        )
    return f"the plugin could not use the token it held ({problem})"


def _rotation_code(origins: Origins, installation_id: str) -> str | None:
    """A rotation code for the installation, minted by the plugin as its operator asks;
    None when the plugin does not hold that installation."""
    minted = _mint(origins, {"installation_id": installation_id})
    if minted.status_code == 404:
        return None
    _expect(minted, 201, origins)
    code: str = minted.json()["code"]
    return code


def _install(origins: Origins) -> dict[str, Any]:
    """Mint an activation code as the operator and hand it to the local Dee Wan."""
    minted = _mint(origins, None)
    _expect(minted, 201, origins)
    answer = httpx.post(
        f"{origins.core}/__fake/install", json={"code": minted.json()["code"]}, timeout=10
    )
    if answer.status_code != 201:
        raise DevStackError(f"the local Dee Wan could not install the plugin: {_answer(answer)}")
    installation: dict[str, Any] = answer.json()["installation"]
    return installation


def _uninstall(origins: Origins, installation_id: str) -> None:
    answer = httpx.post(
        f"{origins.core}/__fake/uninstall", json={"installation_id": installation_id}, timeout=10
    )
    if answer.status_code != 200:
        raise DevStackError(
            f"the local Dee Wan could not uninstall {installation_id}: {_answer(answer)}"
        )


def _mint(origins: Origins, body: dict[str, str] | None) -> httpx.Response:
    return httpx.post(
        f"{origins.plugin}/admin/activation-codes",
        headers={"authorization": f"Bearer {origins.admin_secret}"},
        json=body,
        timeout=10,
    )


def _expect(minted: httpx.Response, status: int, origins: Origins) -> None:
    if minted.status_code != status:
        raise DevStackError(
            f"the plugin refused to mint a code: {_answer(minted)} "
            f"(is ADMIN_SECRET in {origins.vars_hint} right?)"
        )


def _answer(response: httpx.Response) -> str:
    """`HTTP 401 plugin_unauthorized`, plus the fake core's reason when it gives one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    words = [f"HTTP {response.status_code}"]
    if isinstance(body, dict):
        words += [str(body[k]) for k in ("code", "reason") if body.get(k)]
    return " ".join(words)
