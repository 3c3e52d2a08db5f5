"""The use cases a page and an agent share: access and launch, schedules (create, re-pin,
cancel, dismiss), listings, notification endpoints, agents.

Each takes plain values and the ports (`Services`) and returns a value, or raises a `Refusal`
saying why not. Each rule they apply lives in one function, here or in `domain/`. They know
nothing of requests, cookies or HTML: the HTTP handlers parse, call one action, and render or
redirect.
"""
