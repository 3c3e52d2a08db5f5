"""What tests (and the benchmarks) share, importable as `tests.support.<module>`.

- `app`: the plugin's App on an in-memory SQLite D1, its test env, a fake clock, calls.
- `activation`: activation codes and `/dee-wan/activate` payloads.
- `world`: the plugin and fake_core wired in-process, and a cookie-keeping browser.
- `scripted_core`: a Dee Wan that answers from a script (for hostile answers).
- `loopback_core`: a slow Dee Wan on a loopback port (for timing and connection limits).
- `d1_rows`: installation and schedule rows for the Worker's D1 under Pyodide.
- `browser`: headless Chromium helpers for the real-browser tests.

Test files and conftest.py import from here, never from each other
(tests/test_imports.py checks it).
"""
