"""Mutation testing: change the core in small ways (mutmut) and count the changes no test notices.

Run from the repository root as `python -m scripts.mutation [MODULE…]` (what `scripts/mutation`
and `scripts/test --mutation` do). Each module of `MODULES` runs in a workspace of its own
(`.mutation/<module>/`, made anew each run, kept afterwards to look into) with only the tests
the map names for it, under a host zone with a half-hour offset and DST, so a mutant that
leans on the host's zone cannot pass because the machine runs in UTC. A table per module
(generated, killed, survived, timeout, equivalent, score) and a Markdown summary of all of
them are printed; the exit status is 1 when a module scores under its threshold, or when
`mutation_equivalents.toml` lists a mutant that no longer survives.

mutmut tries each mutant in a fork of a process that imported the code already, so a change
to code that runs at import (a table built by a helper) is never live there. A mutant it
leaves standing, and that the equivalents file does not explain, is tried once more in a
process of its own, where the module is imported with the mutant live.

The score is (killed + timeout) / (generated - equivalent).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "scheduling"
WORK = ROOT / ".mutation"
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.toml")
# Adelaide's rules as a POSIX TZ string: +09:30, +10:30 in summer. The C library reads it
# without a zoneinfo file, so no machine falls back to UTC for want of tzdata.
HOST_ZONE = "ACST-9:30ACDT,M10.1.0,M4.1.0/3"
THRESHOLD = 0.90
# Tests that run the Worker under Pyodide or drive a browser run code in other processes,
# never the mutant: left out, as their start-up (seconds) would be paid for every survivor.
DESELECT = ("-m", "not pyodide and not browser")


@dataclass(frozen=True)
class Target:
    """The tests that exercise a module (mutmut runs, for each mutant, those of them that
    call the mutated function) and the score it must reach."""

    tests: tuple[str, ...]
    threshold: float = THRESHOLD


# The one map: module (under src/scheduling/) → the tests that exercise it.
MODULES: dict[str, Target] = {
    "domain/times.py": Target(
        (
            "tests/test_lateness.py",
            "tests/test_localtime.py",
            "tests/test_docs.py",
            "tests/test_timezones.py",
            "tests/test_time_labels.py",
        )
    ),
    "domain/outcomes.py": Target(
        (
            "tests/test_retry_policy.py",
            "tests/test_statuses.py",
            "tests/test_docs.py",
            "tests/test_plugin_contract.py",
        )
    ),
    "domain/addresses.py": Target(
        ("tests/test_base_url.py", "tests/test_inward_addresses.py", "tests/test_activation.py")
    ),
    "domain/schedules.py": Target(
        (
            "tests/test_pins.py",
            "tests/test_editor_page.py",
            "tests/test_rights.py",
            "tests/test_release_units.py",
            "tests/test_collision_rules.py",
            "tests/test_alarm_units.py",
        )
    ),
    "runner/engine.py": Target(
        (
            "tests/test_budget.py",
            "tests/test_runner_limits.py",
            "tests/test_engine_units.py",
        )
    ),
    # The runner (issue 40): each module mapped to its unit suite on known inputs, where a
    # mutant costs milliseconds. The end-to-end suites (test_runner, test_schedule_clock,
    # test_notifications…) stay the integration net in `bash scripts/test`, not here: each
    # survivor would run them all, seconds a mutant, and the fresh pass again.
    "runner/sends.py": Target(
        ("tests/test_send_work_units.py", "tests/test_release_send_units.py")
    ),
    # Releases (issue 47): the status a person sees, the hold at claim, the notices' choice.
    "runner/deliveries.py": Target(("tests/test_delivery_work_units.py",)),
    # An installation's alarm clock (issue 35): earlier never later, a failed alarm's retry.
    "runner/alarm.py": Target(("tests/test_alarm_units.py",)),
    # The tick holds the watchdog, the cron's tick, the backstop and the purge since the merge.
    "runner/tick.py": Target(
        (
            "tests/test_watchdog_units.py",
            "tests/test_tick_units.py",
            "tests/test_cron_backstop.py",
            "tests/test_retention.py",
        )
    ),
}

# mutmut's statuses, as this table counts them.
CAUGHT = {"killed": "killed", "timeout": "timeout", "segfault": "timeout"}


@dataclass(eq=False)
class Mutant:
    name: str  # mutmut's, e.g. scheduling.domain.times.x_percentile__mutmut_3
    function: str  # scheduling.domain.times.percentile, scheduling.runner.engine.Budget.of
    status: str  # mutmut's: killed, survived, timeout, no tests, not checked…
    diff: str  # the changed lines, `-` then `+`
    fresh: bool = False  # decided in a process of its own


@dataclass(frozen=True)
class Equivalent:
    function: str
    mutant: str  # the mutated line(s), as the `+` side of the mutant's diff reads
    reason: str


@dataclass
class Result:
    module: str
    target: Target
    mutants: list[Mutant]
    equivalent: list[Mutant] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the equivalents file against the run
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for m in self.mutants if CAUGHT.get(m.status) == status)

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.status not in CAUGHT and m not in self.equivalent]

    @property
    def score(self) -> float:
        counted = len(self.mutants) - len(self.equivalent)
        caught = self.count("killed") + self.count("timeout")
        return caught / counted if counted else 1.0

    @property
    def passed(self) -> bool:
        return self.score >= self.target.threshold and not self.problems


def module_path(name: str) -> str:
    """`domain/times.py`, from that, `src/scheduling/domain/times.py` or
    `scheduling.domain.times`."""
    name = name.removeprefix("src/").removeprefix("scheduling/")
    if not name.endswith(".py"):
        name = name.removeprefix("scheduling.").replace(".", "/") + ".py"
    if name not in MODULES:
        raise SystemExit(f"mutation: no tests are mapped to {name}; known: {', '.join(MODULES)}")
    return name


def dotted(module: str) -> str:
    return "scheduling." + module.removesuffix(".py").replace("/", ".")


def pytest_settings() -> str:
    """The project's `[tool.pytest.ini_options]`, as written in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    start = text.index("[tool.pytest.ini_options]")
    end = text.find("\n[", start)
    return text[start : end if end != -1 else None].strip() + "\n"


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def workspace(module: str, target: Target) -> Path:
    """A fresh directory where mutmut copies `src/` into `mutants/` and runs the tests there.
    Everything else the tests read (tests/, fake_core/, README.md…) is linked, not copied."""
    work = WORK / dotted(module)
    shutil.rmtree(work, ignore_errors=True)
    (work / "mutants").mkdir(parents=True)
    (work / "src").symlink_to(ROOT / "src")
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in ("src", "pyproject.toml"):
            continue
        (work / "mutants" / entry.name).symlink_to(entry)
    (work / "pyproject.toml").write_text(
        "# Made by scripts/mutation.py for one run; the map is in MODULES there.\n"
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {toml_list([f'src/scheduling/{module}'])}\n"
        f"pytest_add_cli_args = {toml_list(list(DESELECT))}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(list(target.tests))}\n"
        "use_git_change_detection = false\n"
        "timeout_multiplier = 5.0\n\n" + pytest_settings(),
        "utf-8",
    )
    return work


def run_mutmut(module: str, work: Path, jobs: int) -> None:
    """`mutmut run` in `work`, its spinner kept in mutmut.log, a line of progress now and then."""
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, "TZ": HOST_ZONE}
    log = work / "mutmut.log"
    progress = re.compile(r"(\d+)/(\d+)\s")
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(  # noqa: S603 - the venv's own mutmut, fixed arguments
            [str(mutmut), "run", "--max-children", str(jobs)],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        said = time.monotonic()
        tail = ""
        while chunk := os.read(process.stdout.fileno(), 4096) if process.stdout else b"":
            text = chunk.decode("utf-8", "replace")
            out.write(text)
            tail = (tail + text)[-400:]
            if time.monotonic() - said > 30:
                found = progress.findall(tail)
                if found:
                    done, total = found[-1]
                    print(f"  {module}: {done}/{total} mutants tried", flush=True)
                said = time.monotonic()
        code = process.wait()
    output = log.read_text("utf-8", "replace")
    if code != 0 and "Unable to force test failures" in output:
        # No mapped test calls the module's functions once it is imported (they run at
        # import only): mutmut stops before trying any mutant, and the fresh pass tries all.
        print(f"  {module}: no function runs after import; every mutant goes to the fresh pass")
    elif code != 0:
        print(output[-3000:])
        raise SystemExit(f"mutation: mutmut failed on {module} (exit {code}); see {log}")


def changed_lines(diff: str) -> str:
    lines = diff.splitlines()
    return "\n".join(
        line for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def added(diff: str) -> str:
    """The mutant's side of a diff, whitespace collapsed: what the equivalents file names."""
    plus = [line[1:] for line in diff.splitlines() if line.startswith("+")]
    return " ".join(" ".join(plus).split())


def function_of(name: str) -> str:
    """`scheduling.runner.engine.xǁBudgetǁof__mutmut_2` → `scheduling.runner.engine.Budget.of`."""
    mangled = name.partition("__mutmut_")[0]
    module, _, key = mangled.rpartition(".")
    if key.startswith("x_"):
        return f"{module}.{key[2:]}"
    _, cls, method = key.split("ǁ")
    return f"{module}.{cls}.{method}"


def mutants_of(module: str, work: Path) -> list[Mutant]:
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    source = Path("src/scheduling") / module
    meta = json.loads((work / "mutants" / f"{source}.meta").read_text("utf-8"))
    mutants = []
    with contextlib.chdir(work):
        for name, code in meta["exit_code_by_key"].items():
            status = status_by_exit_code[code]
            diff = "" if status in CAUGHT else changed_lines(get_diff_for_mutant(name, path=source))
            mutants.append(Mutant(name, function_of(name), status, diff))
    return mutants


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, list[Equivalent]]:
    """Module → its equivalent mutants, from the TOML file: a table per module, in it a list
    per function (`percentile`, `Budget.of`) of `{ mutant = "…", reason = "…" }`."""
    data = tomllib.loads(path.read_text("utf-8"))
    return {
        module: [
            Equivalent(f"{module}.{function}", " ".join(entry["mutant"].split()), entry["reason"])
            for function, entries in functions.items()
            for entry in entries
        ]
        for module, functions in data.items()
    }


def match_equivalents(result: Result, equivalents: dict[str, list[Equivalent]]) -> None:
    """Survivors the file lists are equivalent. An entry that matches no survivor is a problem:
    a test kills it now, or the code changed, and the file must follow."""
    for entry in equivalents.get(dotted(result.module), []):
        same = [
            m
            for m in result.survivors
            if m.function == entry.function and added(m.diff) == entry.mutant
        ]
        if same:
            result.equivalent.extend(same)
        else:
            result.problems.append(
                f"{entry.function}: no surviving mutant reads `{entry.mutant}` (a test kills it"
                " now, or the code changed): remove or update the entry"
            )


def pytest_in(work: Path, target: Target, mutant: str, timeout_s: float) -> int | None:
    """The mapped tests in a process of their own, in `work/mutants/` with `mutant` live (""
    for none): pytest's exit status, None when it ran out of time."""
    mutants = work / "mutants"
    env = {
        **os.environ,
        "TZ": HOST_ZONE,
        "MUTANT_UNDER_TEST": mutant,
        "PYTHONPATH": os.pathsep.join([str(mutants / "src"), str(mutants)]),
        "PY_IGNORE_IMPORTMISMATCH": "1",
    }
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly"]
    command += ["-p", "no:cacheprovider", "--rootdir=.", *DESELECT, *target.tests]
    try:
        done = subprocess.run(  # noqa: S603 - this Python's pytest, the mapped tests
            command, cwd=mutants, env=env, capture_output=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    return done.returncode


def fresh_pass(result: Result, work: Path) -> None:
    """Try each survivor nobody explained again in a process of its own (see the module's
    docstring). The same run without a mutant must pass first; then failing tests (1), a
    collection error (2), pytest's internal error (3) or a conftest that no longer imports
    (4) kill it, and running out of time is a timeout."""
    pending = result.survivors
    if not pending:
        return
    stats = json.loads((work / "mutants" / "mutmut-stats.json").read_text("utf-8"))
    limit = 60 + 5 * sum(stats.get("duration_by_test", {}).values())
    clean = pytest_in(work, result.target, "", limit * 2)
    if clean != 0:
        raise SystemExit(f"mutation: the mapped tests fail without a mutant (exit {clean})")
    print(f"  {result.module}: {len(pending)} survivors tried again in fresh processes", flush=True)
    for mutant in pending:
        code = pytest_in(work, result.target, mutant.name, limit)
        if code is None:
            mutant.status, mutant.fresh = "timeout", True
        elif code in (1, 2, 3, 4):
            mutant.status, mutant.fresh = "killed", True
        elif code != 0:
            raise SystemExit(f"mutation: pytest exit {code} for {mutant.name}")


def run_module(module: str, jobs: int, equivalents: dict[str, list[Equivalent]]) -> Result:
    target = MODULES[module]
    print(f"\n== {module} (tests: {', '.join(target.tests)})", flush=True)
    started = time.monotonic()
    work = workspace(module, target)
    run_mutmut(module, work, jobs)
    result = Result(module, target, mutants_of(module, work))
    match_equivalents(result, equivalents)
    fresh_pass(result, work)
    result.seconds = time.monotonic() - started
    return result


def table(results: list[Result]) -> str:
    """The Markdown table the developer docs carry."""
    rows = [
        "| module | generated | killed | survived | timeout | equivalent | score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| `{r.module}` | {len(r.mutants)} | {r.count('killed')} | {len(r.survivors)}"
            f" | {r.count('timeout')} | {len(r.equivalent)} | {r.score:.1%} |"
        )
    return "\n".join(rows)


def report(result: Result) -> None:
    statuses = Counter(m.status for m in result.survivors)
    print(table([result]))
    verdict = "ok" if result.passed else "UNDER THRESHOLD" if not result.problems else "PROBLEM"
    print(
        f"{result.module}: {result.score:.1%} (threshold {result.target.threshold:.0%}),"
        f" {result.seconds:.0f} s: {verdict}"
    )
    fresh = sum(1 for m in result.mutants if m.fresh and m.status in CAUGHT)
    if fresh:
        print(f"  {fresh} of them caught only in a fresh process (the mutated code runs at import)")
    if statuses.keys() - {"survived"}:
        print(
            "  not caught, by mutmut's status: "
            + ", ".join(f"{k} {v}" for k, v in statuses.items())
        )
    for mutant in result.survivors:
        print(f"  survived: {mutant.name} ({mutant.status})")
        for line in mutant.diff.splitlines():
            print(f"      {line}")
    for problem in result.problems:
        print(f"  equivalents file: {problem}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/mutation", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("modules", nargs="*", metavar="MODULE", help="e.g. domain/times.py")
    parser.add_argument(
        "--jobs", type=int, default=1, help="mutmut workers (default 1: the machine is shared)"
    )
    args = parser.parse_args(argv)
    modules = [module_path(m) for m in args.modules] or list(MODULES)
    equivalents = load_equivalents()
    started = time.monotonic()
    results = []
    for module in modules:
        result = run_module(module, args.jobs, equivalents)
        report(result)
        results.append(result)
    print(f"\n== mutation testing: {len(results)} modules in {time.monotonic() - started:.0f} s")
    print(table(results))
    failed = [r.module for r in results if not r.passed]
    if failed:
        print(f"under threshold or with a problem: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
