"""The pages, one module each: a page's route handlers, its view model, its template source
and what only it reads. A handler is `async (request, services) -> Response`: it parses the
request, calls one action, and renders a page, answers JSON or redirects; a refusal it lets
`App.handle` render. A new page is a module and its lines in `app.py`'s route table."""
