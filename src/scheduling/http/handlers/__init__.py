"""HTTP handlers, one module per route family. Each is `async (request, services) -> Response`."""
