"""How a notification reaches an endpoint: the `Channel` port, one channel per kind of
endpoint, and the kinds' registry (`kinds.py`)."""
