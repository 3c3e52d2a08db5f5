"""wrangler.example.jsonc, as the tests read it."""

from __future__ import annotations

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "wrangler.example.jsonc"
