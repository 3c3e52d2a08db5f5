"""Fixtures, and one hook; what they are built from lives in tests/support/."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from scheduling.app import App
from scheduling.ports import Database
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, make_app, memory_db
from tests.support.runtimes import CpythonRuntime, Runtime, pyodide_runtime
from tests.support.world import World

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from tests.pyodide_harness.harness import FakeCoreProcess, Harness


def pytest_configure(config: pytest.Config) -> None:
    # A run started in the background by a shell without job control inherits SIGINT
    # ignored, and so would every server a test starts and stops with Ctrl-C (the fake Dee
    # Wan then never stopped, and the run hung). A handled signal is reset to the default
    # in a child, so the servers start as they would from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# No hypothesis example is timed: speed is the benchmarks' to measure, and a 200 ms deadline
# fails an honest example on a loaded machine (both CPUs busy with the suite's workers).
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# Modules that start real processes or build something (the local server, the dev stack, a
# wheel, the docs site, hypothesis's long searches): marked `servers`, which
# `scripts/test --quick` leaves out so the edit-test loop stays under 90 s.
SERVERS = frozenset(
    {
        "test_asgi",
        "test_clock_serve",
        "test_compressed_answers",
        "test_dev_command",
        "test_docs_site",
        "test_fake_core_server",
        "test_fuzz",
        "test_fuzz_transitions",
        "test_launch_limits",
        "test_local_runtime",
        "test_packaging",
        "test_parser_work",
        "test_slow_input",
    }
)


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.path.stem in SERVERS:
        item.add_marker(pytest.mark.servers)


@pytest.fixture
def db() -> Iterator[SqliteDatabase]:
    database = memory_db()
    yield database
    database.close()


@pytest.fixture(params=["sqlite", pytest.param("d1", marks=pytest.mark.pyodide)])
async def any_db(request: pytest.FixtureRequest) -> AsyncIterator[Database]:
    """An empty, migrated database: in-memory SQLite, then Miniflare's D1 through the Workers
    adapter (the harness's second D1, which the Worker never sees, emptied before each test;
    tests/test_store_contract.py)."""
    if request.param == "sqlite":
        database = memory_db()
        yield database
        database.close()
        return
    from tests.pyodide_harness.remote_d1 import contract_database

    d1 = await contract_database(request.getfixturevalue("harness").control_url)
    yield d1
    await d1.aclose()


@pytest.fixture(scope="session")
def harness() -> Harness:
    """The Pyodide harness this test process shares (started on first use), or a skip
    where Node is missing."""
    from tests.pyodide_harness.harness import node_path, shared_harness

    if node_path() is None:
        pytest.skip("node is not installed: the Pyodide harness needs Node 20+")
    return shared_harness()


@pytest.fixture(scope="session")
def pyodide_core(harness: Harness) -> Iterator[FakeCoreProcess]:
    """`python -m fake_core` for the harness's Worker, shared by the session's runtime tests."""
    from tests.pyodide_harness.harness import FakeCoreProcess

    process = FakeCoreProcess(harness.origin, Path(harness.workdir) / "fake_core_runtime.log")
    yield process
    process.close()


# What a Pyodide scenario may leave in the shared harness's D1, children first.
WORKER_TABLES = (
    "proposals",
    "agent_keys",
    "webhook_deliveries",
    "notification_subscriptions",
    "notification_endpoints",
    "schedule_attempts",
    "schedules",
    "sessions",
    "activation_codes",
    "installations",
    "tick_history",
    "runner_totals",
)


@pytest.fixture
def worker(harness: Harness) -> Iterator[Harness]:
    """The shared harness with an empty database and the base variables, for the Pyodide
    scenarios that seed D1 themselves."""
    harness.set_vars(harness.base_vars)
    harness.execute(*((f"DELETE FROM {table}", []) for table in WORKER_TABLES))
    yield harness
    harness.set_vars(harness.base_vars)


@pytest.fixture
def core(pyodide_core: FakeCoreProcess) -> FakeCoreProcess:
    """The session's `python -m fake_core` for the Pyodide tests, reset to the demo site."""
    pyodide_core.control("POST", "reset")
    pyodide_core.control("POST", "seed", {"demo": True})
    return pyodide_core


@pytest.fixture(params=["cpython", pytest.param("pyodide", marks=pytest.mark.pyodide)])
async def runtime(
    request: pytest.FixtureRequest, db: SqliteDatabase, clock: FakeClock
) -> AsyncIterator[Runtime]:
    """The plugin on each runtime, as browsers, Dee Wan and the edge reach it
    (tests/support/runtimes.py), from an empty database: a behaviour written once, run on
    both."""
    if request.param == "cpython":
        cpython = CpythonRuntime(World(db, clock))
        yield cpython
        await cpython.close()
        return
    harness, core = request.getfixturevalue("worker"), request.getfixturevalue("core")
    async with pyodide_runtime(harness, core) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for a module of the browser tests (tests/support/browser.py)."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests' screenshots go: BROWSER_SCREENSHOTS, or a temporary folder."""
    chosen = os.environ.get("BROWSER_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots in {folder}")
    return folder


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(db: SqliteDatabase, clock: FakeClock) -> App:
    return make_app(db, clock)


@pytest.fixture
def world(db: SqliteDatabase, clock: FakeClock) -> World:
    """The plugin and an in-process fake Dee Wan, wired together (tests/support/world.py)."""
    return World(db, clock)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (SCHEDULING_REQUIRE_ALL=1) a skipped test fails the run: nothing quietly not run."""
    if not os.environ.get("SCHEDULING_REQUIRE_ALL"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and session.exitstatus == 0:
        for report in skipped:
            print(f"\nskipped under SCHEDULING_REQUIRE_ALL: {report.nodeid}: {report.longrepr}")
        session.exitstatus = 1
