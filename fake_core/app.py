"""The server's app: one route table for the protocol (/api/), the control API
(/__fake/), the home page and its forms (/ui/), the plugin's webhooks (/webhooks) and its
chat messages (/chat/…)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from fake_core import chat, control, home, ui, webhooks
from fake_core.context import Context
from fake_core.core import FakeCore
from fake_core.install import PluginCaller
from fake_core.routing import Request, Route, find
from fake_core.saved_state import StateFile
from fake_core.templates import environment
from fake_core.wire import Reply


async def _protocol(ctx: Context, request: Request) -> Reply:
    """Protocol v1: the core routes its own paths (the in-process transport uses it too)."""
    reply, _ = ctx.core.receive(request.method, request.target, request.headers, request.body)
    return reply


ROUTES: tuple[Route, ...] = (
    Route("*", "/api/", _protocol, prefix=True),
    Route("GET", "/", home.show),
    Route("GET", "/style.css", home.style),
    Route("POST", "/webhooks", webhooks.receive),
    Route("POST", "/chat/", chat.receive, prefix=True),
    *ui.ROUTES,
    *control.ROUTES,
)


class FakeCoreApp:
    def __init__(
        self,
        core: FakeCore,
        *,
        plugin_origin: str = "http://localhost:8788",
        plugin_caller: PluginCaller | None = None,
        stall_s: float = 60.0,
        plugin_admin_secret: str | None = None,
        admin_caller: PluginCaller | None = None,
        state_file: StateFile | None = None,
        plugin_tick_url: str | None = None,
        tick_caller: PluginCaller | None = None,
    ) -> None:
        """`plugin_admin_secret`: the plugin's operator bearer secret. With it the home
        page mints codes at `{plugin_origin}/admin/activation-codes` (through
        `admin_caller`, by default the core's plugin caller) for one-click rotate and
        install. It is sent only there, and never shown.

        `state_file`: where the core's state is saved after each request that changed it.

        `plugin_tick_url`: the plugin's development tick trigger; with it the home page
        has "Run the tick now", which posts there through `tick_caller` (by default the
        core's plugin caller).
        """
        if plugin_caller is not None:
            core.plugin_caller = plugin_caller
        self.context = Context(
            core,
            environment(),
            plugin_origin=plugin_origin.rstrip("/"),
            plugin_admin_secret=plugin_admin_secret or None,
            admin_caller=admin_caller,
            plugin_tick_url=plugin_tick_url,
            tick_caller=tick_caller,
        )
        self.stall_s = stall_s  # how long a `timeout` fault holds the socket at most
        self.state_file = state_file

    @property
    def core(self) -> FakeCore:
        return self.context.core

    async def dispatch(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        split = urlsplit(target)
        request = Request(method, target, split.path, dict(parse_qsl(split.query)), headers, body)
        found = find(ROUTES, method, split.path)
        if isinstance(found, Reply):
            return found
        reply = await found(self.context, request)
        if self.state_file is not None:
            # Before the socket layer acts: a dropped or held answer was processed all the same.
            self.state_file.save(self.core.state)
        return reply
