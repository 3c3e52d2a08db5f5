"""The CPython runtime: sqlite3 for D1, `cryptography`, httpx, an ASGI server."""
