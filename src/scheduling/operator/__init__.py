"""The operator's read models: whether the runner is stalled and the status JSON
(`health.py`), what /admin/metrics exposes (`metrics.py`) and what the operator page shows
(`view.py`), all read from the tick history, the running totals and the schedules. The
runner writes those (`runner/history.py`) and never reads these."""
