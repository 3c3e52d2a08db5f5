"""The Workers runtime: the isolate (`isolate.py`), the adapters over D1, `crypto.subtle` and
`fetch` (`adapters.py`), the installations' clocks on Durable Objects (`schedule_clock.py`).

Only importable under Pyodide (they import `js` and `pyodide`), except `bindings.py`, which
reads the env's bindings and the platform's limits and imports none of them.
"""

import os

# No pydantic plugin ships with the Worker: without this, pydantic's first model scans every
# installed distribution's entry points for one, about 30 ms of the Worker's startup under
# Pyodide. The entry imports this package before any model is built.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
