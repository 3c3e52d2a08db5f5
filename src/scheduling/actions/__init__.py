"""The use cases, one module each: launch, show a page, create (and re-pin), cancel,
activate and rotate, mint a code, delete an installation's data.

Each takes plain values and the ports (`Services`) and returns a value, or raises
a `Refusal` saying why not. Each rule they apply lives in one function, here or
in `domain/`. They know nothing of requests, cookies or HTML: the HTTP handlers
parse, call one action, and render or redirect.
"""
