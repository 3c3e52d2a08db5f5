"""Runtime adapters. Only these packages import sqlite3, HTTP clients, `js` or `workers`."""
