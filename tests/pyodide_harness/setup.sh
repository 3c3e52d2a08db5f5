#!/usr/bin/env bash
# Prepare the Pyodide harness: node deps from package-lock.json, and the Worker's
# Python packages for Pyodide 314 fetched from PyPI (versions from pyproject.toml)
# into tests/pyodide_harness/.cache/. Idempotent; a second run takes well under a second.
#
#   bash tests/pyodide_harness/setup.sh        # PYTHON=... to choose the interpreter
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
if ! command -v node >/dev/null 2>&1; then
  echo "pyodide harness: node is not installed, nothing to set up; the pyodide tests will skip" >&2
  exit 0
fi

cd "$HERE"
# npm ci only when node_modules does not come from this exact lock file.
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.harness-lock-sha256"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
  # Install scripts are not needed: miniflare finds workerd's binary in its platform package.
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
  echo "$lock_hash" > "$stamp"
else
  echo "node_modules up to date"
fi

"$PYTHON" "$HERE/fetch_packages.py"
