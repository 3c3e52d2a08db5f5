"""Draw the plugin's layers, from the table `tests/test_layers.py` enforces, as the SVG the
architecture page shows (docs/images/layers.svg).

Run `.venv/bin/python -m scripts.layer_diagram` after changing `LAYERS`;
tests/test_docs_site.py fails while the picture and the table disagree.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "docs" / "images" / "layers.svg"
CORE = ROOT / "src" / "scheduling"
TABLE = ROOT / "tests" / "test_layers.py"
Layers = list[tuple[str, frozenset[str]]]


def layers_table(source: str) -> Layers:
    """`LAYERS` as test_layers.py writes it, read from its source (nothing imports a test
    file): a list of `(description, frozenset({units}))`, bottom first."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "LAYERS"
            and isinstance(node.value, ast.List)
        ):
            table: Layers = []
            for layer in node.value.elts:
                if not isinstance(layer, ast.Tuple) or not isinstance(layer.elts[1], ast.Call):
                    raise ValueError(f"not (description, frozenset({{...}})): {ast.unparse(layer)}")
                description, units = layer.elts[0], layer.elts[1]
                table.append(
                    (ast.literal_eval(description), frozenset(ast.literal_eval(units.args[0])))
                )
            return table
    raise LookupError("no LAYERS table in tests/test_layers.py")


WIDTH = 760
MARGIN = 16
ARROW = 44  # the column on the left with the "imports point down" arrow
BAND_X = MARGIN + ARROW
BAND_WIDTH = WIDTH - BAND_X - MARGIN
PAD = 10
TITLE_HEIGHT = 20
CHIP_HEIGHT = 22
CHIP_GAP = 6
CHAR = 7.8  # the width of one character of 13 px monospace
BAND_GAP = 8


def chip_width(unit: str) -> float:
    return len(unit) * CHAR + 2 * 8


def chip_rows(units: Sequence[str]) -> list[list[str]]:
    """The units of a band in rows that fit its width, in order."""
    rows: list[list[str]] = [[]]
    used = 0.0
    for unit in units:
        wanted = chip_width(unit) + CHIP_GAP
        if rows[-1] and used + wanted > BAND_WIDTH - 2 * PAD:
            rows.append([])
            used = 0.0
        rows[-1].append(unit)
        used += wanted
    return rows


def unit_label(unit: str) -> str:
    """A unit as the code names it: `domain/`, `http/html/`, `ports.py`, `__main__.py`."""
    folder = unit.replace(".", "/")
    return f"{folder}/" if (CORE / folder).is_dir() else f"{unit}.py"


def render(layers: Sequence[tuple[str, frozenset[str]]]) -> str:
    """The SVG, top layer first: each band is a layer, numbered from the bottom as the
    table counts them, with its units."""
    bands: list[str] = []
    y = float(MARGIN)
    for number, (description, units) in reversed(list(enumerate(layers, start=1))):
        rows = chip_rows(sorted(unit_label(u) for u in units))
        height = float(PAD + TITLE_HEIGHT + len(rows) * (CHIP_HEIGHT + CHIP_GAP) + PAD - CHIP_GAP)
        parts = [
            f'<rect class="band" x="{BAND_X}" y="{y:.0f}" width="{BAND_WIDTH}" '
            f'height="{height:.0f}" rx="6"/>',
            f'<text class="title" x="{BAND_X + PAD}" y="{y + PAD + 14:.0f}">'
            f"{number}. {escape(description[:1].upper() + description[1:])}</text>",
        ]
        chip_y = y + PAD + TITLE_HEIGHT
        for row in rows:
            x = float(BAND_X + PAD)
            for label in row:
                width = chip_width(label)
                parts.append(
                    f'<rect class="chip" x="{x:.0f}" y="{chip_y:.0f}" width="{width:.0f}" '
                    f'height="{CHIP_HEIGHT}" rx="4"/>'
                    f'<text class="unit" x="{x + 8:.0f}" y="{chip_y + 15:.0f}">'
                    f"{escape(label)}</text>"
                )
                x += width + CHIP_GAP
            chip_y += CHIP_HEIGHT + CHIP_GAP
        bands.append("\n".join(parts))
        y += height + BAND_GAP
    height = y - BAND_GAP + MARGIN
    arrow_x = MARGIN + ARROW / 2 - 6
    names = "; ".join(
        f"{n}. {d}: {', '.join(sorted(unit_label(u) for u in units))}"
        for n, (d, units) in enumerate(layers, start=1)
    )
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
            f'width="{WIDTH}" height="{height:.0f}" role="img" '
            'aria-labelledby="layers-title layers-desc">',
            '<title id="layers-title">The plugin\'s layers, bottom to top</title>',
            f'<desc id="layers-desc">A module imports its own layer or those below. {escape(names)}'
            "</desc>",
            "<style>",
            ".back { fill: #ffffff; }",
            ".band { fill: #eef2f8; stroke: #4a5a75; stroke-width: 1; }",
            ".chip { fill: #ffffff; stroke: #8a99b3; stroke-width: 1; }",
            ".title { font: 600 14px sans-serif; fill: #1b2433; }",
            ".unit { font: 13px monospace; fill: #1b2433; }",
            ".arrow { stroke: #4a5a75; stroke-width: 2; fill: none; }",
            ".note { font: 12px sans-serif; fill: #4a5a75; }",
            "</style>",
            f'<rect class="back" width="{WIDTH}" height="{height:.0f}"/>',
            *bands,
            f'<path class="arrow" d="M {arrow_x:.0f} {MARGIN + 8} V {height - MARGIN - 8:.0f} '
            f"M {arrow_x - 6:.0f} {height - MARGIN - 16:.0f} L {arrow_x:.0f} "
            f'{height - MARGIN - 8:.0f} L {arrow_x + 6:.0f} {height - MARGIN - 16:.0f}"/>',
            f'<text class="note" transform="translate({arrow_x + 16:.0f} {height / 2:.0f}) '
            'rotate(-90)" text-anchor="middle">imports point down</text>',
            "</svg>",
            "",
        ]
    )


def main() -> None:
    PICTURE.parent.mkdir(parents=True, exist_ok=True)
    PICTURE.write_text(render(layers_table(TABLE.read_text("utf-8"))), "utf-8")
    print(f"wrote {PICTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
