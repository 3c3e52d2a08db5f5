"""Every parser of foreign bytes, against the slowest input found for it. Asserts nothing.

For each parser, the time of the worst input found, divided by the time of a benign input
of the same size, at 4 KiB, 16 KiB, 64 KiB and 1 MiB, up to the parser's own limit. A
linear parser keeps the ratio a small constant at every size; a super-linear one shows it
growing with the size (the JSON pre-scan this replaced, measured last, for comparison).

The worst input is the slowest of hand-made adversaries (unclosed strings full of escapes,
deep nesting, runs of separators…) and of what hypothesis finds: it
generates periodic inputs (a prefix, a unit repeated, a suffix) from tokens that mean
something to that parser, and `hypothesis.target()` steers it towards the most time per
byte. Times are the best of several runs.

    python -m bench.parser_bench [--examples 150] [--quick] [--no-pyodide]

It also times the JSON pre-scan through the real Worker entry under Pyodide (the harness),
where each request's body goes through the same parser.

Run from the repo root with the venv's Python.
"""

from __future__ import annotations

import argparse
import gc
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import strategies as st

from tests.support.foreign_bytes import (
    JSON_TOKENS,
    KIB,
    Parser,
    fill,
    json_document,
    parsers,
)

SIZES = (4 * KIB, 16 * KIB, 64 * KIB, 1024 * KIB)
SEARCH_SIZE = 4 * KIB


# -- timing ----------------------------------------------------------------------------------


def seconds(run: Callable[[bytes], None], data: bytes, *, budget_s: float = 0.004) -> float:
    """Best time of one call, over a few batches of calls that each take about `budget_s`.
    The garbage collector is off meanwhile, as `timeit` has it: a collection would charge
    one parser for the objects the others left."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _seconds(run, data, budget_s)
    finally:
        if collecting:
            gc.enable()


def _seconds(run: Callable[[bytes], None], data: bytes, budget_s: float) -> float:
    calls = 1
    while True:
        started = time.perf_counter()
        for _ in range(calls):
            run(data)
        spent = time.perf_counter() - started
        if spent >= budget_s or calls >= 1 << 14:
            break
        calls *= 4
    best = spent / calls
    for _ in range(4 if spent < 1 else 1):
        started = time.perf_counter()
        for _ in range(calls):
            run(data)
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def search(parser: Parser, examples: int) -> bytes:
    """hypothesis's slowest input per byte at SEARCH_SIZE: a periodic pattern of tokens."""

    def tokens(least: int, most: int) -> st.SearchStrategy[bytes]:
        pieces = st.lists(st.sampled_from(list(parser.tokens)), min_size=least, max_size=most)
        return pieces.map(b"".join)

    patterns = st.tuples(tokens(0, 2), tokens(1, 4), tokens(0, 2))
    worst: list[tuple[float, tuple[bytes, bytes, bytes]]] = []

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.target],
        suppress_health_check=list(HealthCheck),
    )
    @given(patterns)
    def slowest(pattern: tuple[bytes, bytes, bytes]) -> None:
        prefix, unit, suffix = pattern
        data = fill(unit, SEARCH_SIZE, prefix, suffix)
        per_byte = seconds(parser.runner(SEARCH_SIZE), data, budget_s=0.001) / len(data)
        target(per_byte * 1e9, label="ns per byte")
        if not worst or per_byte > worst[0][0]:
            worst[:] = [(per_byte, pattern)]

    slowest()
    prefix, unit, suffix = worst[0][1]
    parser.adversaries["found by hypothesis"] = lambda n: fill(unit, n, prefix, suffix)
    return unit


@dataclass
class Row:
    name: str
    cap: int
    cells: dict[int, tuple[float, float, str]]  # size -> (benign s, worst s, worst's name)


def measure(parser: Parser, rounds: int = 3) -> Row:
    """Benign and every adversary side by side, `rounds` times (each keeps its best), so a
    machine busy with other work slows both alike."""
    cells = {}
    for size in parser.sizes(SIZES):
        run = parser.runner(size)
        inputs = {"benign": parser.benign(size)}
        inputs.update({name: make(size) for name, make in parser.adversaries.items()})
        best = dict.fromkeys(inputs, float("inf"))
        for _ in range(rounds):
            for name, data in inputs.items():
                best[name] = min(best[name], seconds(run, data))
        benign = best.pop("benign")
        worst, name = max((spent, name) for name, spent in best.items())
        cells[size] = (benign, worst, name)
    return Row(parser.name, parser.cap, cells)


# -- the scan this replaced, for comparison ------------------------------------------------

_OLD_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def old_prescan(data: bytes) -> None:
    """safe_json's nesting check before issue 17 (a string regex that backtracks)."""
    depth = 0
    for token in _OLD_TOKENS.finditer(data.decode("utf-8", errors="replace")):
        char = token.group()
        depth += 1 if char in "[{" else -1 if char in "]}" else 0


def through_the_worker() -> None:
    """The JSON pre-scan through the real Worker entry under Pyodide (the harness): one
    `POST /dee-wan/activate` per body, best of five, each hostile body against a benign one."""
    from tests.pyodide_harness.harness import node_path, shared_harness

    if node_path() is None:
        print("(no node: the Worker under Pyodide was not measured)")
        return
    json_parser = parsers()[0]
    with shared_harness().client() as client:

        def post(body: bytes) -> float:
            best = float("inf")
            for _ in range(5):
                started = time.perf_counter()
                client.post("/dee-wan/activate", content=body)
                best = min(best, time.perf_counter() - started)
            return best

        print()
        print("| Through the Worker under Pyodide: `POST /dee-wan/activate` | 16 KiB | 64 KiB |")
        print("|---|---|---|")
        benign = {size: post(json_document(size)) for size in (16 * KIB, 64 * KIB)}
        for name, make in json_parser.adversaries.items():
            cells = []
            for size in (16 * KIB, 64 * KIB):
                worst = post(make(size))
                ratio = worst / benign[size]
                cells.append(f"**{ratio:.1f}\N{MULTIPLICATION SIGN}** ({millis(worst)})")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print(
            f"| (benign: an honest JSON object) | {millis(benign[16 * KIB])} | "
            f"{millis(benign[64 * KIB])} |"
        )


def label(size: int) -> str:
    if size % KIB:
        return f"{size} B"
    return f"{size // KIB} KiB" if size < 1024 * KIB else f"{size // (1024 * KIB)} MiB"


def millis(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--examples", type=int, default=150, help="hypothesis examples each")
    options.add_argument("--quick", action="store_true", help="no search, no comparison")
    options.add_argument(
        "--no-pyodide", action="store_true", help="skip the Worker under Pyodide (the harness)"
    )
    args = options.parse_args()

    rows = []
    for parser in parsers():
        if not args.quick:
            unit = search(parser, args.examples)
            print(f"searched {parser.name}: slowest unit {unit[:24]!r}", flush=True)
        rows.append(measure(parser))

    print()
    print(
        "| Parser (its limit) | Worst input found | "
        + " | ".join(label(size) for size in SIZES)
        + " | at its limit |"
    )
    print("|---|---|" + "---|" * (len(SIZES) + 1))
    for row in rows:
        # The sizes it is measured at, then its limit when that is none of them.
        shown = [size if size in row.cells else None for size in SIZES]
        shown.append(None if row.cap in SIZES else row.cap)
        cells = []
        for size in shown:
            if size is None:
                cells.append("")
                continue
            benign, worst, _ = row.cells[size]
            cells.append(f"**{worst / benign:.1f}\N{MULTIPLICATION SIGN}** ({millis(worst)})")
        worst_name = max(row.cells.values(), key=lambda cell: cell[1] / cell[0])[2]
        print(f"| {row.name} ({label(row.cap)}) | {worst_name} | " + " | ".join(cells) + " |")

    if not args.quick:
        # The old pre-scan, at 4 and 16 KiB only (64 KiB takes about 18 s, 1 MiB hours).

        def old_at(size: int) -> str:
            benign = seconds(old_prescan, json_document(size))
            worst = seconds(old_prescan, fill(b'\\"', size, b'"'), budget_s=0)
            return f"**{worst / benign:.0f}\N{MULTIPLICATION SIGN}** ({millis(worst)})"

        print(
            '| before this fix: the old JSON pre-scan | unclosed string of \\" | '
            f"{old_at(4 * KIB)} | {old_at(16 * KIB)} | not measured (about 18 s) | | |"
        )
        old = Parser("old", 16 * KIB, old_prescan, json_document, {}, JSON_TOKENS)
        unit = search(old, args.examples)
        print(f"(hypothesis, on the old pre-scan at 4 KiB: slowest unit {unit[:24]!r})")
        if not args.no_pyodide:
            through_the_worker()


if __name__ == "__main__":
    main()
