"""The pages, one room each: a folder named for the page (or one module for a small page)
holding its route handlers, its view model, its template source and what only it reads.
A handler is `async (request, services) -> Response`: it parses the request, calls one
action, and renders a page, answers JSON or redirects; a refusal it lets `App.handle`
render. A new page is a room and its lines in `app.py`'s route table."""
