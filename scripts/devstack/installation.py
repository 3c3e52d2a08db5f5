"""The plugin's installation in the local Dee Wan: the one from the last run, or a new one.

The local Dee Wan keeps its state in the state dir and the plugin keeps its
database there, so a restart finds both sides of the last run's installation
and uses it again: its schedules stay on the plugin's pages and keep working.
An installation is new when there is none for these origins, or when the
plugin no longer holds it (its database was deleted); the stale one is then
uninstalled so the home page offers only working buttons.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from scripts.devstack.errors import DevStackError


@dataclass(frozen=True)
class Connected:
    installation: dict[str, Any]  # as the local Dee Wan's control API shows it
    reused: bool
    replaced: str | None = None  # the last run's installation, which the plugin no longer held


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
    state = httpx.get(f"{origins.core}/__fake/state", timeout=10).json()
    replaced = None
    last = _last_run(state["installations"], origins)
    if last is not None:
        if _plugin_holds(origins, last["id"]):
            return Connected(last, reused=True)
        _uninstall(origins, last["id"])
        replaced = last["id"]
    return Connected(_install(origins), reused=False, replaced=replaced)


def _last_run(installations: list[dict[str, Any]], origins: Origins) -> dict[str, Any] | None:
    """The newest active installation of this plugin that was told this core's URL."""
    usable = [
        i
        for i in installations
        if not i["revoked"]
        and i["plugin_origin"] == origins.plugin
        and i["base_url"] == origins.core
    ]
    return usable[-1] if usable else None


def _plugin_holds(origins: Origins, installation_id: str) -> bool:
    """Ask the plugin, as its operator, for a rotation code: it mints one only for an
    installation it holds. The code is left unused; it expires in 15 minutes."""
    minted = _mint(origins, {"installation_id": installation_id})
    if minted.status_code == 404:
        return False
    _expect(minted, 201, origins)
    return True


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
