"""wrangler.example.jsonc as it is, and with its queue fan-out switched on as its comment says."""

from __future__ import annotations

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "wrangler.example.jsonc"
QUEUE_FIRST, QUEUE_LAST = '  // "queues": {\n', "  // },\n"


def queue_switched_on(text: str) -> str:
    """The example's text with `// ` taken from each line of the commented `queues` block."""
    lines = text.splitlines(keepends=True)
    first = lines.index(QUEUE_FIRST)
    last = lines.index(QUEUE_LAST, first)
    for i in range(first, last + 1):
        lines[i] = lines[i].replace("// ", "", 1)
    return "".join(lines)
