"""How a notification reaches an endpoint: the `Channel` port (`port.py`) and its
implementations, one per kind of endpoint (`webhook.py`: a signed Standard Webhook)."""
