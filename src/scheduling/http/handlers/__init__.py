"""HTTP handlers, one module per route family. Each is `async (request, services) -> Response`:
it parses the request, calls one action, and renders a page, answers JSON or redirects.
Handlers import no other handler."""
