"""Runs inside a fresh Pyodide (startup.mjs): imports one module as workerd does before it
takes the Worker's memory snapshot, and finds every random draw made on the way.

Before the snapshot, workerd lets randomness be drawn only where its SDK allows it:
`pydantic_core`, twice (its own import seeds a Rust hash map, and the SDK then builds a tiny
validator so a lazily seeded one is seeded too). Any other entropy call fails the deploy
("Randomness is not allowed while a Python Worker is starting"), and calls to `random`'s
functions are blocked until the first request. Here each entropy call Pyodide makes (counted
in JS by startup.mjs) and each call of a `random` function is a draw, charged to the module
whose top level made it, or to `pydantic_core`'s allowance inside its import.

Nothing in `src/` imports this module; it never ships.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

# From startup.mjs: entropy calls so far, and this process's CPU time so far (ms).
from _harness_probe import cpu_ms, draws  # type: ignore[import-not-found]

# What the SDK's import patches allow before the snapshot (workers-runtime-sdk 1.9.5,
# `_workers_sdk_entropy_import_context.pydantic_core_context`).
ALLOWED = {"pydantic_core": 2}
SLOWEST = 400  # modules listed by their own import time
# Packages whose own import time is added up apart; the rest is the standard library's.
GROUPS = {"scheduling", "entry", "workers", "pydantic", "pydantic_core", "jinja2", "markupsafe"}


class _Frame:
    def __init__(self, name: str, start: int) -> None:
        self.name = name
        self.start = start
        self.inner = 0  # draws made while a module it imported ran
        self.started = float(cpu_ms())
        self.inner_ms = 0.0  # CPU time spent in the modules it imported


class Probe(importlib.abc.MetaPathFinder):
    """A finder ahead of the others that wraps each module's loader to keep the import stack."""

    def __init__(self) -> None:
        self.random_calls = 0
        self.stack: list[_Frame] = []
        self.allowed: dict[str, int] = {}
        self.violations: dict[str, int] = {}
        self.own_ms: dict[str, float] = {}  # each module's own import CPU time

    def draws(self) -> int:
        return int(draws()) + self.random_calls

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if find else None
            )
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            spec.loader = _Attributed(spec.loader, self, fullname)  # type: ignore[assignment]
        return spec

    @contextmanager
    def running(self, name: str) -> Iterator[None]:
        frame = _Frame(name, self.draws())
        self.stack.append(frame)
        try:
            yield
        finally:
            self.stack.pop()
            total = self.draws() - frame.start
            own = total - frame.inner
            elapsed = float(cpu_ms()) - frame.started
            self.own_ms[name] = self.own_ms.get(name, 0.0) + elapsed - frame.inner_ms
            if self.stack:
                self.stack[-1].inner += total
                self.stack[-1].inner_ms += elapsed
            self._charge(name, own)
            if name in ALLOWED:
                self.allowed[name] = self.allowed.get(name, 0) + total

    def _charge(self, name: str, own: int) -> None:
        """Own draws inside an allowance's import are the allowance's; the rest break it."""
        if own and not any(frame.name in ALLOWED for frame in self.stack) and name not in ALLOWED:
            self.violations[name] = self.violations.get(name, 0) + own

    def block_random(self) -> None:
        """Every call of a `random` function counts, as workerd blocks them before requests."""
        for name in dir(random):
            value = getattr(random, name)
            if name.startswith("_") or isinstance(value, type) or not callable(value):
                continue
            setattr(random, name, self._counted(value))

    def _counted(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.random_calls += 1
            return function(*args, **kwargs)

        return counted


class _Attributed:
    """The module's own loader, its create and exec run as a frame of the probe's stack."""

    def __init__(self, loader: Any, probe: Probe, name: str) -> None:
        self._loader = loader
        self._probe = probe
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._loader, attribute)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        with self._probe.running(self._name):
            module: ModuleType | None = self._loader.create_module(spec)
            return module

    def exec_module(self, module: ModuleType) -> None:
        with self._probe.running(self._name):
            self._loader.exec_module(module)
            if self._name == "pydantic_core":
                module.SchemaValidator({"type": "any"})  # as the SDK's patch does


# What workerd imports before the Worker's top level runs (its `snapshotImports`, read in
# workerd's source): in the snapshot already, so not the Worker's cost.
WORKERD_IMPORTS = (
    "_pyodide,traceback,collections.abc,asyncio,inspect,tarfile,importlib,importlib.metadata,"
    "re,shutil,sysconfig,pathlib,site,tempfile,typing,zipfile"
)


def preload(names: str) -> None:
    """Import `names` (separated by commas; `workerd` for workerd's own imports) before the
    timed import, so that they count in neither its time nor its modules."""
    for module in names.replace("workerd", WORKERD_IMPORTS).split(","):
        if module:
            importlib.import_module(module)


def probe(name: str, attribute: bool) -> str:
    """JSON: how long importing `name` (modules separated by commas) took, how many modules
    it loaded, and (with `attribute`) each module's own CPU time, the draws the allowance
    took and those it did not cover, by module."""
    before = set(sys.modules)
    finder = Probe()
    if attribute:
        finder.block_random()
        sys.meta_path.insert(0, finder)
    started = time.perf_counter()
    try:
        for module in name.split(","):
            importlib.import_module(module)
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        if attribute:
            sys.meta_path.remove(finder)
    report: dict[str, Any] = {
        "module": name,
        "import_ms": round(elapsed_ms, 1),
        "modules": len(set(sys.modules) - before),
    }
    if attribute:
        report["loaded"] = sorted(set(sys.modules) - before)
        report["allowed"] = finder.allowed
        report["violations"] = finder.violations
        slowest = sorted(finder.own_ms.items(), key=lambda item: -item[1])[:SLOWEST]
        report["slowest_cpu_ms"] = [[module, round(ms, 1)] for module, ms in slowest]
        packages: dict[str, float] = {}
        for module, ms in finder.own_ms.items():
            top = module.split(".")[0]
            group = top if top in GROUPS else "stdlib and the rest"
            packages[group] = packages.get(group, 0.0) + ms
        report["cpu_ms_by_package"] = {name: round(ms, 1) for name, ms in packages.items()}
    return json.dumps(report, sort_keys=True)
