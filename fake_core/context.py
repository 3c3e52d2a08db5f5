"""What every route of the server sees: the core, the plugin it was started for, the page's state.

Its own module so that the app, the control API, the home page and its
actions all import it, and none of them imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jinja2

from fake_core.core import FakeCore
from fake_core.install import PluginCaller


@dataclass
class Context:
    core: FakeCore
    templates: jinja2.Environment
    plugin_origin: str = "http://localhost:8788"
    # The plugin's operator bearer secret: sent only to `plugin_origin`, never shown.
    plugin_admin_secret: str | None = field(default=None, repr=False)
    admin_caller: PluginCaller | None = None  # for minting codes; None: the core's caller
    # The plugin's development tick trigger (`…/__scheduled?cron=…`): "Run the tick now".
    plugin_tick_url: str | None = None
    tick_caller: PluginCaller | None = None  # None: the core's caller
    notice: str | None = None  # what the last form post did, shown once on the home page

    def take_notice(self) -> str | None:
        notice, self.notice = self.scrub(self.notice), None
        return notice

    def scrub(self, text: str | None) -> str | None:
        """Text with the operator secret blanked out, should anything ever echo it."""
        secret = self.plugin_admin_secret
        if text is None or secret is None:
            return text
        return text.replace(secret, "[secret]")
