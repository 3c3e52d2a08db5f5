"""The Workers runtime: adapters over the `workers` SDK, D1, `crypto.subtle` and `fetch`.

Only importable under Pyodide (they import `js`, `pyodide` and `workers`), except
`bindings.py`, which reads the env's D1 binding and imports none of them.
"""
