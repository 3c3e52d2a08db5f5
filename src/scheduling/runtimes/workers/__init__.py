"""The Workers runtime: adapters over the `workers` SDK, D1, `crypto.subtle` and `fetch`.

Only importable under Pyodide (they import `js`, `pyodide` and `workers`).
"""
