#!/usr/bin/env bash
# Prepare the browser tests (tests/test_browser_*.py): Debian's Chromium at
# /usr/bin/chromium and axe-core from package-lock.json. Idempotent; when both
# are present it only compares a hash and exits.
#
# Never runs `playwright install`: the Python playwright package drives the
# system Chromium through executable_path.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "setup.sh: /usr/bin/chromium is missing and this is not root (no sudo): the browser tests will be skipped" >&2
    exit 1
  fi
  echo "installing Debian's chromium"
  "${SUDO[@]}" apt-get update -qq
  # Only what chromium needs to run headless: recommends would add ~130 packages, daemons too.
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
else
  echo "chromium present: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "setup.sh: npm is not installed; the browser tests will be skipped" >&2
  exit 1
fi

cd "$HERE"
# npm ci only when node_modules does not come from this exact lock file.
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.browser-lock-sha256"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ] || [ ! -f node_modules/axe-core/axe.min.js ]; then
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
  echo "$lock_hash" > "$stamp"
else
  echo "node_modules up to date"
fi
