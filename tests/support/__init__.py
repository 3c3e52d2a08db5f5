"""What tests (and the benchmarks) share, importable as `tests.support.<module>`.

- `app`: the plugin's App on an in-memory SQLite D1, its test env, a fake clock, calls.
- `activation`: activation codes and `/dee-wan/activate` payloads.
- `world`: the plugin and fake_core wired in-process, and a cookie-keeping browser.
- `scripted_core`: a Dee Wan that answers from a script (for hostile answers).
- `runtimes`: the plugin on each runtime, for a behaviour written once (the `runtime` fixture).
- `loopback_core`: the one HTTP server on loopback, answering from a handler: a slow Dee Wan,
  a webhook receiver (for timing, connection limits, the Worker's fetch).
- `d1_rows`: installation and schedule rows for the Worker's D1 under Pyodide.
- `browser`: headless Chromium helpers for the real-browser tests.

Test files and conftest.py import from here, never from each other
(tests/test_imports.py checks it).
"""
