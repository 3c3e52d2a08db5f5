"""Read pytest's output on stdin and print its counts as one plain line for scripts/test's
last line: `1402 passed, 0 failed` (errors count as failed), `, 3 skipped` when any were."""

from __future__ import annotations

import re
import sys

SUMMARY = re.compile(r"^=+ (.*?) in [\d.]+s(?: \([\d:]+\))? =+$")
COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def counts(output: str) -> str:
    """The counts of the last summary line of `output`; `no test summary` without one."""
    found = [m.group(1) for line in output.splitlines() if (m := SUMMARY.match(line.strip()))]
    if not found:
        return "no test summary"
    seen = {
        kind.rstrip("s") if kind.startswith("error") else kind: int(n)
        for n, kind in COUNT.findall(found[-1])
    }
    failed = seen.get("failed", 0) + seen.get("error", 0)
    line = f"{seen.get('passed', 0)} passed, {failed} failed"
    return line + (f", {seen['skipped']} skipped" if seen.get("skipped") else "")


if __name__ == "__main__":
    print(counts(sys.stdin.read()))
