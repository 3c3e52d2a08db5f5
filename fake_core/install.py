"""The install flow, core side: manifest check, activate, rotate, uninstall, launch.

Core calls the plugin through a `PluginCaller`, so tests can route to the
plugin app in-process and the server can use httpx. An installation is kept
(or a token replaced) only when the plugin confirms with the exact answer.
Each step works on the `CoreState` and the base URL it is given; `FakeCore`
wires them in.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fake_core.contract import MANIFEST_VERSION, PROTOCOL
from fake_core.state import ALL_CAPABILITIES, CoreState, Installation, LaunchCode
from fake_core.wire import new_secret, parse_json_object

# (method, url, headers, body) -> (status, headers, body)
PluginCaller = Callable[
    [str, str, dict[str, str], bytes | None], Awaitable[tuple[int, dict[str, str], bytes]]
]
LAUNCH_MS = 60_000


class InstallError(Exception):
    """The plugin refused, or answered something core does not trust."""

    def __init__(self, reason: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(f"{reason} (status={status}, code={code})")
        self.reason, self.status, self.code = reason, status, code


@dataclass(frozen=True)
class Launch:
    code: str
    url: str
    installation_id: str
    person_id: str
    context: dict[str, str]


async def fetch_manifest(caller: PluginCaller, plugin_origin: str) -> dict[str, Any]:
    origin = plugin_origin.rstrip("/")
    status, _, body = await caller("GET", f"{origin}/dee-wan/manifest.json", {}, None)
    manifest = parse_json_object(body)
    if status != 200 or manifest is None:
        raise InstallError("manifest_unavailable", status)
    check_manifest(manifest, origin)
    return manifest


def check_manifest(manifest: dict[str, Any], origin: str) -> dict[str, str]:
    """Launch URL templates by kind; raises InstallError for anything off-contract."""
    if manifest.get("manifest_version") != MANIFEST_VERSION or manifest.get("protocol") != PROTOCOL:
        raise InstallError("unsupported_manifest")
    if manifest.get("origin") != origin:
        raise InstallError("manifest_origin_mismatch")
    if not _on_origin(manifest.get("activation_url"), origin):
        raise InstallError("bad_activation_url")
    capabilities = manifest.get("capabilities")
    if not isinstance(capabilities, list) or not set(capabilities) <= ALL_CAPABILITIES:
        raise InstallError("bad_capabilities")
    templates: dict[str, str] = {}
    launches = manifest.get("launches")
    for launch in launches if isinstance(launches, list) else []:
        kind = launch.get("kind") if isinstance(launch, dict) else None
        url = launch.get("url") if isinstance(launch, dict) else None
        if kind not in ("content", "manage") or not _on_origin(url, origin):
            raise InstallError("bad_launch")
        if "{installation_id}" not in str(url):
            raise InstallError("bad_launch")
        templates[str(kind)] = str(url)
    if not templates:
        raise InstallError("bad_launch")
    return templates


async def install(
    state: CoreState,
    caller: PluginCaller,
    base_url: str,
    plugin_origin: str,
    code: str,
    *,
    models: Iterable[str] | None = None,
    capabilities: Iterable[str] | None = None,
) -> Installation:
    origin = plugin_origin.rstrip("/")
    manifest = await fetch_manifest(caller, origin)
    offered = frozenset(manifest["capabilities"])
    granted = offered if capabilities is None else frozenset(capabilities)
    if not granted <= offered:
        raise InstallError("capability_not_offered")
    installation = Installation(
        id=state.new_installation_id(),
        plugin_origin=origin,
        token=new_secret("dwp_"),
        capabilities=granted,
        models=None if models is None else frozenset(models),
        launch_urls=check_manifest(manifest, origin),
        manifest=manifest,
        base_url=base_url,
    )
    await _send(state, caller, base_url, installation, "activate", code, installation.token, 201)
    state.installations[installation.id] = installation
    return installation


async def rotate(
    state: CoreState, caller: PluginCaller, base_url: str, installation_id: str, code: str
) -> Installation:
    installation = state.installations[installation_id]
    if installation.revoked or installation.manifest is None:
        raise InstallError("not_rotatable")
    new_token = new_secret("dwp_")
    await _send(state, caller, base_url, installation, "rotate", code, new_token, 200)
    installation.token = new_token  # the old token stops working here
    return installation


def uninstall(state: CoreState, installation_id: str) -> Installation:
    installation = state.installations[installation_id]
    installation.revoked = True
    return installation


def register(
    state: CoreState,
    plugin_origin: str = "https://scheduling.example",
    *,
    models: Iterable[str] | None = None,
    capabilities: Iterable[str] = ALL_CAPABILITIES,
) -> Installation:
    """An installation without talking to a plugin: for protocol-only tests."""
    origin = plugin_origin.rstrip("/")
    template = f"{origin}/installations/{{installation_id}}"
    installation = Installation(
        state.new_installation_id(),
        origin,
        new_secret("dwp_"),
        frozenset(capabilities),
        None if models is None else frozenset(models),
        launch_urls=dict.fromkeys(("content", "manage"), template),
    )
    state.installations[installation.id] = installation
    return installation


def issue_launch(
    state: CoreState, now_ms: int, installation_id: str, person_id: str, context: dict[str, str]
) -> Launch:
    installation = state.installations.get(installation_id)
    if installation is None or installation.revoked:
        raise KeyError(f"no active installation {installation_id}")
    person = state.persons.get(person_id)
    if person is None:
        raise KeyError(f"no person {person_id}")
    kind = context.get("kind")
    if kind == "content":
        known = context.get("content_id") in state.contents
        if set(context) != {"kind", "content_id"} or not known:
            raise ValueError("content context needs a known content_id")
    elif context != {"kind": "manage"}:
        raise ValueError("context must be content or manage")
    elif not person.is_admin:
        # Dee Wan offers the Manage launch to site admins only; the plugin relies on it.
        raise ValueError(f"only a site admin is offered the Manage launch, not {person_id}")
    code = new_secret("dwl_")
    state.launches[code] = LaunchCode(
        code, installation_id, person_id, dict(context), now_ms + LAUNCH_MS
    )
    url = installation.launch_urls[str(kind)].replace("{installation_id}", installation_id)
    url += ("&" if "?" in url else "?") + f"dee_wan_launch={code}"
    return Launch(code, url, installation_id, person_id, dict(context))


async def _send(
    state: CoreState,
    caller: PluginCaller,
    base_url: str,
    installation: Installation,
    action: str,
    code: str,
    token: str,
    expected_status: int,
) -> None:
    assert installation.manifest is not None
    body = json.dumps(
        {
            "protocol": "v1",
            "action": action,
            "code": code,
            "installation_id": installation.id,
            "site_id": state.site.id,
            "base_url": base_url,
            "token": token,
        }
    ).encode()
    headers = {"content-type": "application/json"}
    status, _, answer = await caller("POST", installation.manifest["activation_url"], headers, body)
    data = parse_json_object(answer)
    code_back = data.get("code") if data else None
    expected = "activated" if action == "activate" else "rotated"
    if status != expected_status or code_back != expected:
        shown = code_back if isinstance(code_back, str) else None
        raise InstallError(f"{action}_refused", status, shown)


def _on_origin(url: object, origin: str) -> bool:
    return isinstance(url, str) and url.startswith(origin + "/")
