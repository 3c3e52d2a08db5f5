"""The Workers runtime: only importable under Pyodide (it imports `js` and `pyodide`), except
`bindings.py`."""

import os

# No pydantic plugin ships with the Worker: without this, pydantic's first model scans every
# installed distribution's entry points for one, about 30 ms of the Worker's startup under
# Pyodide. The entry imports this package before any model is built.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
