"""Routes one server request: protocol (/api/), control (/__fake/), or the home page."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from fake_core import control, homepage
from fake_core.core import FakeCore
from fake_core.install import PluginCaller
from fake_core.wire import Reply, error, header


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
    ) -> None:
        """`plugin_admin_secret`: the plugin's operator bearer secret. With it the home
        page mints codes at `{plugin_origin}/admin/activation-codes` (through
        `admin_caller`, by default the core's plugin caller) for one-click rotate and
        install. It is sent only there, and never shown.
        """
        self.core = core
        self.plugin_origin = plugin_origin.rstrip("/")
        self.stall_s = stall_s  # how long a `timeout` fault holds the socket at most
        self.plugin_admin_secret = plugin_admin_secret or None
        self.admin_caller = admin_caller
        self.notice: str | None = None
        if plugin_caller is not None:
            core.plugin_caller = plugin_caller

    def take_notice(self) -> str | None:
        notice, self.notice = self.scrub(self.notice), None
        return notice

    def scrub(self, text: str | None) -> str | None:
        """Text with the operator secret blanked out, should anything ever echo it."""
        secret = self.plugin_admin_secret
        if text is None or secret is None:
            return text
        return text.replace(secret, "[secret]")

    async def dispatch(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        split = urlsplit(target)
        path = split.path
        if path.startswith("/api/"):
            reply, _ = self.core.receive(method, target, headers, body)
            return reply
        if path.startswith("/__fake/"):
            query = dict(parse_qsl(split.query))
            return await control.handle(self, method, path.removeprefix("/__fake/"), query, body)
        if (method, path) == ("GET", "/"):
            return homepage.page(self)
        if (method, path) == ("GET", "/style.css"):
            return homepage.style()
        if method == "POST" and path.startswith("/ui/"):
            if not self._same_origin(headers):
                return error(403, "cross_origin_form")
            return await homepage.action(self, path.removeprefix("/ui/"), body)
        return error(404, "not_found")

    def _same_origin(self, headers: Mapping[str, str]) -> bool:
        """Forms change state: refuse a post another site's page made."""
        origin = header(headers, "origin")
        host = header(headers, "host")
        return origin is None or (host is not None and urlsplit(origin).netloc == host)
