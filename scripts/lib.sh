# Shared set-up steps for scripts/test and scripts/dev. Idempotent: fast when already done.

step() { printf '\n== %s\n' "$*"; }

ensure_venv() {
  local python="${PYTHON:-python3}"
  if [ ! -x .venv/bin/python ]; then
    step "creating .venv with $($python --version)"
    "$python" -m venv .venv
  fi
  # Exactly the files in requirements/lock.txt (made by scripts/lock), each checked against its
  # sha256: everything the project and its extras need, pip and setuptools included; then the
  # project itself (editable, built by the locked setuptools), which brings nothing more.
  local stamp=.venv/.installed-$(cat pyproject.toml requirements/lock.txt | sha256sum | cut -c1-16)
  if [ ! -f "$stamp" ]; then
    step "installing Python dependencies (requirements/lock.txt, hashes required)"
    install_locked requirements/lock.txt
    .venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
    rm -f .venv/.installed-* && touch "$stamp"
  fi
}

# Installs a lock made by scripts/lock into .venv: every file must match one of its hashes.
install_locked() {
  .venv/bin/python -m pip install --quiet --require-hashes --only-binary=:all: -r "$1"
}

# Node, Pyodide and browser pieces the tests need; each helper script is idempotent.
ensure_test_tools() {
  for setup in tests/*/setup.sh; do
    [ -f "$setup" ] || continue
    step "setting up ${setup%/setup.sh}"
    bash "$setup"
  done
}
