"""The harness really runs the Workers runtime: Pyodide, the `workers` SDK, WebCrypto, D1.

Also checks wrangler.example.jsonc with wrangler itself, and that its `vars`
are the defaults the configuration model declares.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduling.config import VARIABLES, Configuration
from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS
from scheduling.runtimes.workers.bindings import LAUNCH_LIMITER_BINDING, SCHEDULE_CLOCK_BINDING
from scripts.wrangler_config import parse_config, read_config
from tests.pyodide_harness.harness import (
    HERE,
    SERVE,
    WRANGLER_EXAMPLE,
    Harness,
    node_path,
    shared_harness,
)

pytestmark = pytest.mark.pyodide


def test_the_entry_runs_under_pyodide_314(harness: Harness) -> None:
    info = harness.info()
    assert info["platform"] == "emscripten"
    assert info["implementation"] == "cpython"
    assert info["python_version"].startswith("3.14.")
    assert info["pyodide"] == "314.0.7"
    assert info["entry_file"] == "/worker/src/entry.py"


def test_compat_flags_are_those_on_at_the_example_date(harness: Harness) -> None:
    if os.environ.get("PYODIDE_HARNESS_COMPAT_FLAGS") is not None:
        pytest.skip("PYODIDE_HARNESS_COMPAT_FLAGS overrides the flags")
    assert harness.info()["compat_flags"] == {
        "python_request_headers_preserve_commas": True,  # on from 2026-02-17
        "python_workflows_implicit_dependencies": True,  # on for python_workers from 2026-02-25
        "python_no_such_flag": False,
    }


def test_the_app_is_built_from_the_workers_adapters_only(harness: Harness) -> None:
    services = harness.info()["services"]
    assert services == {
        "db": "scheduling.runtimes.workers.adapters.D1Database",
        "http": "scheduling.runtimes.workers.adapters.WorkersFetch",
        "clock": "scheduling.runtimes.workers.adapters.WorkersClock",
        "crypto": "scheduling.runtimes.workers.adapters.WebCrypto",
        "make_crypto": "scheduling.runtimes.workers.adapters.WebCrypto",
        # No LAUNCH_LIMITER binding: failed launches are counted in the isolate.
        "rate_limiter": "scheduling.failure_throttle.MemoryRateLimiter",
    }
    with harness.launch_limiter(10):
        bound = harness.info()["services"]["rate_limiter"]
    assert bound == "scheduling.runtimes.workers.bindings.BindingRateLimiter"
    loaded = harness.info()["runtime_modules"]
    assert "scheduling.runtimes.workers.adapters" in loaded
    assert not [name for name in loaded if name.startswith("scheduling.runtimes.cpython")]


def _example() -> dict[str, object]:
    config = read_config(WRANGLER_EXAMPLE)
    assert isinstance(config, dict)
    return config


def test_wrangler_example_declares_the_worker() -> None:
    config = _example()
    assert config["main"] == "src/entry.py"
    flags = config["compatibility_flags"]
    assert isinstance(flags, list)
    assert "python_workers" in flags
    assert config["d1_databases"] == [
        {
            "binding": "PLUGIN_DB",
            "database_name": "dee-wan-scheduling",
            "database_id": "00000000-0000-0000-0000-000000000000",
            "migrations_dir": "src/scheduling/migrations",
        }
    ]
    assert config["triggers"] == {"crons": ["* * * * *"]}
    # Workers Logs keep every tick's JSON line (issue 21), and no request's URL (issue 45:
    # a launch's carries its code).
    assert config["observability"] == {
        "enabled": True,
        "logs": {"enabled": True, "head_sampling_rate": 1, "invocation_logs": False},
    }
    # The binding counts failed launches as the in-memory limiter does; the plugin holds a
    # client back for its own window, so the binding's period must be the same.
    assert config["ratelimits"] == [
        {
            "name": LAUNCH_LIMITER_BINDING,
            "namespace_id": "1001",
            "simple": {"limit": LAUNCH_FAILURES_PER_MINUTE, "period": WINDOW_MS // 1000},
        }
    ]
    # The harness runs the same compatibility date (the Pyodide 314 line).
    served = re.search(r'COMPATIBILITY_DATE = "([0-9-]+)"', SERVE.read_text("utf-8"))
    assert served is not None
    assert served.group(1) == config["compatibility_date"]


def test_wrangler_example_vars_are_every_variable_with_its_default() -> None:
    variables = _example()["vars"]
    assert isinstance(variables, dict)
    assert set(variables) == set(VARIABLES)
    defaults = Configuration.from_mapping({})
    for name, value in variables.items():
        if name in ("PUBLIC_ORIGIN", "DEE_WAN_DEV_ORIGINS"):
            continue  # no default: the operator's own origin; an empty list
        assert getattr(defaults, name.lower()) == value, name
    assert variables["DEE_WAN_DEV_ORIGINS"] == ""
    text = WRANGLER_EXAMPLE.read_text("utf-8")
    assert "wrangler secret put ADMIN_SECRET" in text
    assert "wrangler secret put TOKEN_KEY" in text


def wrangler_runner(
    tmp_path: Path, config: Path
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """wrangler 4.86.0 from the harness's packages, on `config`, run in `tmp_path`."""
    if node_path() is None:
        pytest.skip("node is not installed: wrangler needs Node 20+")
    wrangler = HERE / "node_modules" / "wrangler" / "bin" / "wrangler.js"
    if not wrangler.exists():
        shared_harness()  # runs setup.sh when node_modules is missing
    env = {**os.environ, "CI": "true", "WRANGLER_SEND_METRICS": "false", "NO_COLOR": "1"}

    def run_wrangler(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [node_path() or "node", str(wrangler), *args, "--config", str(config)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run_wrangler


def test_wrangler_4_86_accepts_the_example_as_it_is(tmp_path: Path) -> None:
    out = tmp_path / "out"
    deploy = wrangler_runner(tmp_path, WRANGLER_EXAMPLE)(
        "deploy", "--dry-run", "--outdir", str(out)
    )
    output = deploy.stdout + deploy.stderr
    assert deploy.returncode == 0, output
    assert "env.PLUGIN_DB (dee-wan-scheduling)" in output
    assert "env.LAUNCH_LIMITER" in output
    assert "env.MAX_ROWS_PER_BATCH (20)" in output
    assert (out / "entry.py").exists()
    migrations = wrangler_runner(tmp_path, WRANGLER_EXAMPLE)(
        "d1",
        "migrations",
        "list",
        "dee-wan-scheduling",
        "--local",
        "--persist-to",
        str(tmp_path / "state"),
    )
    assert migrations.returncode == 0, migrations.stdout + migrations.stderr
    assert "0001_initial.sql" in migrations.stdout
    assert "0007_tick_history.sql" in migrations.stdout
    # wrangler knows every field, `observability` included (it warns of unexpected ones).
    assert "Unexpected fields" not in output, output


def test_a_worker_without_its_d1_binding_answers_misconfigured_naming_it(
    harness: Harness, tmp_path: Path
) -> None:
    # A harness of its own (the shared one's binding could not be put back). JSON cannot
    # remove a name from the env, so the binding becomes null; tests/test_workers_bindings.py
    # covers a name the env lacks. `harness` makes sure the set-up ran.
    unbound = Harness(tmp_path)
    try:
        unbound.set_vars({**unbound.base_vars, "PLUGIN_DB": None})
        with unbound.client() as client:
            assert client.get("/dee-wan/manifest.json").status_code == 200
            operator = {"authorization": f"Bearer {unbound.base_vars['ADMIN_SECRET']}"}
            status = client.get("/admin/status", headers=operator)
        assert status.status_code == 500
        assert status.json() == {
            "code": "misconfigured",
            "message": "PLUGIN_DB is not configured correctly",
        }
        now = int(time.time() * 1000)
        tick = unbound.control.post("/__harness/scheduled", params={"time": now})
        assert tick.status_code == 500  # scheduled() raised, as workerd would log it
        log = unbound.log_tail(200)
        assert "misconfigured: PLUGIN_DB is not bound" in log
        assert '"event":"runner_tick_failed"' in log
        assert '"error":"Misconfigured"' in log
    finally:
        unbound.close()


def clocks_turned_on(text: str) -> str:
    """The example with its one commented SCHEDULE_CLOCK block uncommented, as an operator
    turns the clocks on."""
    lines = text.splitlines()
    start = lines.index('  // "durable_objects": {')
    end = next(i for i, line in enumerate(lines) if '"new_sqlite_classes"' in line)
    for i in range(start, end + 1):
        assert lines[i].startswith("  // "), lines[i]
        lines[i] = "  " + lines[i].removeprefix("  // ")
    return "\n".join(lines) + "\n"


def test_the_alarm_clocks_are_off_as_written_and_one_block_turns_them_on(tmp_path: Path) -> None:
    assert "durable_objects" not in _example()
    assert "migrations" not in _example()
    text = clocks_turned_on(WRANGLER_EXAMPLE.read_text("utf-8"))
    config = parse_config(text)
    assert config["durable_objects"] == {
        "bindings": [{"name": SCHEDULE_CLOCK_BINDING, "class_name": "ScheduleClock"}]
    }
    # A SQLite-backed class (Durable Objects' storage for new classes; Free plans need it).
    [migration] = config["migrations"]
    assert migration["new_sqlite_classes"] == ["ScheduleClock"]
    entry = (WRANGLER_EXAMPLE.parent / "src" / "entry.py").read_text("utf-8")
    assert "class ScheduleClock(DurableObject):" in entry

    # wrangler resolves paths from the config's folder: this copy names them in full.
    root = WRANGLER_EXAMPLE.parent
    text = text.replace('"src/entry.py"', json.dumps(str(root / "src" / "entry.py")))
    text = text.replace(
        '"src/scheduling/migrations"', json.dumps(str(root / "src" / "scheduling" / "migrations"))
    )
    written = tmp_path / "wrangler.jsonc"
    written.write_text(text, "utf-8")
    deploy = wrangler_runner(tmp_path, written)("deploy", "--dry-run", "--outdir", "out")
    output = deploy.stdout + deploy.stderr
    assert deploy.returncode == 0, output
    assert "env.SCHEDULE_CLOCK (ScheduleClock)" in output
    assert "env.PLUGIN_DB (dee-wan-scheduling)" in output
    assert "Unexpected fields" not in output, output
