# Shared set-up steps for scripts/test and scripts/dev. Idempotent: fast when already done.

step() { printf '\n== %s\n' "$*"; }

ensure_venv() {
  local python="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    step "creating .venv with $($python --version)"
    "$python" -m venv .venv
  fi
  # Exactly the versions in requirements/lock.txt (made by scripts/lock): pip and setuptools
  # first, then the project (editable, built by the locked setuptools) with its extras.
  local stamp=.venv/.installed-$(cat pyproject.toml requirements/lock.txt | sha256sum | cut -c1-16)
  if [ ! -f "$stamp" ]; then
    step "installing Python dependencies (requirements/lock.txt)"
    local pip=(.venv/bin/python -m pip install --quiet --constraint requirements/lock.txt)
    "${pip[@]}" --upgrade pip setuptools
    "${pip[@]}" --no-build-isolation -e ".[cpython,test,docs]"
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
