"""The Workers runtime: adapters over the `workers` SDK, D1, `crypto.subtle` and `fetch`.

Only importable under Pyodide (they import `js`, `pyodide` and `workers`), except
`bindings.py`, which reads the env's D1 binding and imports none of them.
"""

import os

# No pydantic plugin ships with the Worker: without this, pydantic's first model scans every
# installed distribution's entry points for one, about 30 ms of the Worker's startup under
# Pyodide. The entry imports this package before any model is built.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
