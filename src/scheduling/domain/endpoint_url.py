"""Which URLs a notification endpoint may have: the Dee Wan base URL's host rule, with a path and
a query allowed.

- `https://host[:port][/path][?query]`, printable ASCII, at most 2 KiB, with no
  credentials, fragment or backslash;
- the host by the one rule for any host the plugin calls (`base_url.origin_problem`,
  `host_problem`): no IP literal in any spelling, no single label, no `localhost` or
  name only a local network answers for;
- in development, an exact origin listed in `DEE_WAN_DEV_ORIGINS`, with any path.
"""

from __future__ import annotations

from scheduling.domain.base_url import PERCENT_PROBLEM, Environment, origin_problem

MAX_URL_BYTES = 2048


def endpoint_url_problem(url: str, config: Environment) -> str | None:
    """None when acceptable; otherwise why not, in a few words."""
    if not url:
        return "must be given"
    if len(url.encode("utf-8")) > MAX_URL_BYTES:
        return f"must be at most {MAX_URL_BYTES} bytes long"
    if not all("\x21" <= ch <= "\x7e" for ch in url):
        return "must be printable ASCII with no whitespace"
    if "\\" in url or "#" in url:
        return "must not contain a backslash or a fragment (#)"
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("https", "http"):
        return "must start with https://"
    # The authority ends where a path or a query starts, as every URL parser reads it.
    end = min((i for i in (rest.find("/"), rest.find("?")) if i != -1), default=len(rest))
    authority, after = rest[:end], rest[end:]
    if "@" in authority:
        return "must not contain credentials"
    if not authority:
        return "must have a host"
    if PERCENT_PROBLEM.search(after):
        return "has a % that is not followed by two hex digits"
    return origin_problem(scheme, authority, config)
