"""The operator's read models (`status.py`, `metrics.py`), read from the tick history, the
running totals and the schedules, which the runner writes and never reads back."""
