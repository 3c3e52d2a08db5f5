"""The operator's read models: whether the runner is stalled, the status JSON and what the
operator page shows (`status.py`), and what /admin/metrics exposes (`metrics.py`), all read
from the tick history, the running totals and the schedules. The runner writes those
(`runner/invocation.py`) and never reads these."""
