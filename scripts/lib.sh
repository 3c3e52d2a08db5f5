# Shared set-up steps for scripts/test and scripts/dev. Idempotent: fast when already done.

step() { printf '\n== %s\n' "$*"; }

ensure_venv() {
  local python="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    step "creating .venv with $($python --version)"
    "$python" -m venv .venv
  fi
  local stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
  if [ ! -f "$stamp" ]; then
    step "installing Python dependencies"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[cpython,test]"
    rm -f .venv/.installed-* && touch "$stamp"
  fi
}

# Node, Pyodide and browser pieces the tests need; each helper script is idempotent.
ensure_test_tools() {
  for setup in tests/*/setup.sh; do
    [ -f "$setup" ] || continue
    step "setting up ${setup%/setup.sh}"
    bash "$setup"
  done
}
