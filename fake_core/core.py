"""FakeCore: the protocol v1 request handler, with faults and a call record.

`receive` does all the work synchronously (no await inside, so one call is
atomic); `handle` turns the reply into what an HTTP client would see.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fake_core import install as flow
from fake_core.clock import AdjustableClock, real_ms
from fake_core.endpoints import authenticate, exchange, read_content
from fake_core.faults import FaultContext, Faults
from fake_core.received import answer, entry_for
from fake_core.record import Call, CallLog
from fake_core.state import ALL_CAPABILITIES, CoreState, Installation, ReceivedTransition
from fake_core.transitions import transition
from fake_core.wire import Reply, error, parse_json, parse_json_object
from scheduling.ports import TransportError, TransportTimeout

API = "/api/plugins/v1"
_ROUTES = {
    "exchange": ("POST", f"{API}/launch/exchange"),
    "transitions": ("POST", f"{API}/transitions"),
}


class FakeCore:
    def __init__(
        self,
        base_url: str = "https://cms.example",
        *,
        clock: Callable[[], int] | None = None,
        plugin_caller: flow.PluginCaller | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.clock = AdjustableClock(clock or real_ms)
        self.plugin_caller = plugin_caller
        self.state = CoreState()
        self.faults = Faults()
        self.calls = CallLog()

    def now_ms(self) -> int:
        return self.clock()

    def reset(self) -> None:
        self.state = CoreState()
        self.faults.clear()
        self.calls.clear()
        self.clock.reset()

    # -- the protocol endpoints ---------------------------------------------

    async def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        """As a client sees it: raises TransportTimeout/TransportError for those faults."""
        reply, call, entry = self._receive(method, path, headers, body)
        if reply.action == "stall":
            raise TransportTimeout("fake core: no answer (timeout fault)")
        if reply.action == "drop":
            raise TransportError("fake core: connection dropped after processing")
        if reply.delay_s:
            try:
                await asyncio.sleep(reply.delay_s)
            except asyncio.CancelledError:
                call.outcome = "client_gave_up"
                if entry is not None:
                    entry.answer = answer(call)
                raise
        return reply.status, dict(reply.headers), reply.body

    def receive(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[Reply, Call]:
        """Process one call (faults included) and record it; the socket layer acts on it."""
        reply, call, _ = self._receive(method, path, headers, body)
        return reply, call

    def _receive(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[Reply, Call, ReceivedTransition | None]:
        """`receive`, plus the entry a transition command left in the home page's log."""
        path = path.split("?", 1)[0]
        endpoint, content_id = self._classify(method, path, body)
        call = Call(
            self.calls.next_seq(),
            self.now_ms(),
            method,
            path,
            endpoint,
            dict(headers),
            parse_json(body),
            body or b"",
        )
        fault = None
        if endpoint != "other":
            context = FaultContext(call.seq, endpoint, method, path, content_id, call.at_ms)
            fault = self.faults.with_latency(self.faults.take(context), endpoint)
        call.fault = fault
        if fault is not None and fault.kind == "timeout":
            reply, call.outcome = Reply(0, action="stall"), "timed_out"
        elif fault is not None and fault.fakes_response:
            reply = fault.reply()  # instead of core: nothing is processed
        else:
            reply, call.applied = self._process(method, path, endpoint, headers, body)
            if fault is not None:
                reply.delay_s = fault.delay_s
                if fault.kind == "apply_then_drop":
                    reply.action, call.outcome = "drop", "dropped"
        if reply.action == "respond":
            call.status, call.code = reply.status, reply.code
        self.calls.add(call)
        entry = None
        if endpoint == "transitions":
            entry = entry_for(self.state, call)
            self.state.receive(entry)
        return reply, call, entry

    def _classify(self, method: str, path: str, body: bytes | None) -> tuple[str, str | None]:
        """Which endpoint, and the content id a scripted fault may target."""
        if path.startswith(f"{API}/content/"):
            wanted = path.removeprefix(f"{API}/content/")
            return ("content", wanted) if "/" not in wanted else ("other", None)
        for endpoint, (_, route) in _ROUTES.items():
            if path == route:
                data = parse_json_object(body) or {}
                found: Any = data.get("content_id")
                if endpoint == "exchange":
                    launch = self.state.launches.get(str(data.get("code")))
                    found = launch.context.get("content_id") if launch else None
                return endpoint, found if isinstance(found, str) else None
        return "other", None

    def _process(
        self,
        method: str,
        path: str,
        endpoint: str,
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> tuple[Reply, bool]:
        if endpoint == "other":
            return error(404, "not_found"), False
        expected_method = _ROUTES[endpoint][0] if endpoint in _ROUTES else "GET"
        if method != expected_method:
            return error(405, "method_not_allowed"), False
        installation = authenticate(self.state, headers)
        if installation is None:
            return error(401, "plugin_unauthorized"), False
        now = self.now_ms()
        if endpoint == "exchange":
            return exchange(self.state, now, installation, headers, body), False
        if endpoint == "content":
            content_id = path.removeprefix(f"{API}/content/")
            return read_content(self.state, now, installation, headers, content_id), False
        return transition(self.state, now, installation, headers, body)

    # -- the install flow (core calls the plugin) ----------------------------

    def _caller(self) -> flow.PluginCaller:
        if self.plugin_caller is None:
            raise RuntimeError("FakeCore needs a plugin_caller to talk to the plugin")
        return self.plugin_caller

    async def fetch_manifest(self, plugin_origin: str) -> dict[str, Any]:
        return await flow.fetch_manifest(self._caller(), plugin_origin)

    async def install(
        self,
        plugin_origin: str,
        code: str,
        *,
        models: Iterable[str] | None = None,
        capabilities: Iterable[str] | None = None,
    ) -> Installation:
        return await flow.install(
            self.state,
            self._caller(),
            self.base_url,
            plugin_origin,
            code,
            models=models,
            capabilities=capabilities,
        )

    async def rotate(self, installation_id: str, code: str) -> Installation:
        return await flow.rotate(self.state, self._caller(), self.base_url, installation_id, code)

    def uninstall(self, installation_id: str) -> Installation:
        return flow.uninstall(self.state, installation_id)

    def register_installation(
        self,
        plugin_origin: str = "https://scheduling.example",
        *,
        models: Iterable[str] | None = None,
        capabilities: Iterable[str] = ALL_CAPABILITIES,
    ) -> Installation:
        return flow.register(self.state, plugin_origin, models=models, capabilities=capabilities)

    def issue_launch(
        self, installation_id: str, person_id: str, context: dict[str, str]
    ) -> flow.Launch:
        return flow.issue_launch(self.state, self.now_ms(), installation_id, person_id, context)
