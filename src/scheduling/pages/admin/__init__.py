"""The operator's routes: the operator page, status, metrics, health, and deleting an
installation's data."""
