"""How a notification reaches an endpoint: the `Channel` port and the one POST (`port.py`),
and its implementations, one per kind of endpoint (`webhook.py`: a signed Standard Webhook;
`chat.py`: a chat message), each registered with what else its kind is in `kinds.py`."""
