"""Which Dee Wan base URLs an installation may have (protocol §3).

The base URL is where every later call goes, so it must be one that every
HTTP client (httpx, Workers' fetch) reads the same way, and it must not point
the plugin at an address of its own network:

- `https://host[:port][/path]`, printable ASCII only, with no credentials,
  query, fragment, backslash or trailing `/`;
- a host of dot-separated labels of letters, digits and inner hyphens (an
  internationalised name in its `xn--` form, which must decode), at most
  253 characters, no empty label;
- a port, when given, of 1 to 65535;
- no IP literal (v4 in any spelling a browser accepts, or [v6]);
- a name the public DNS can answer (`host_problem`): at least two labels, and
  no suffix that only a local resolver, `/etc/hosts` or mDNS answers.

In development (`ENVIRONMENT=development`) an exact origin listed in
`DEE_WAN_DEV_ORIGINS` is accepted as it is, `http://` and loopback included.
"""

from __future__ import annotations

import re
from typing import Protocol

MAX_HOST_LENGTH = 253
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PORT = re.compile(r"[0-9]{1,5}")
PERCENT_PROBLEM = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


class Environment(Protocol):
    """What the rules read of the configuration (`Configuration` is one)."""

    @property
    def is_development(self) -> bool: ...

    @property
    def dev_origins(self) -> tuple[str, ...]: ...


def base_url_problem(url: str, config: Environment) -> str | None:
    """None when acceptable; otherwise why not, in a few words."""
    if not all("\x21" <= ch <= "\x7e" for ch in url):
        return "must be printable ASCII with no whitespace"
    if any(ch in "\\?#@" for ch in url):
        return "must not contain credentials, a query, a fragment or a backslash"
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("https", "http"):
        return "must start with https://"
    authority, _, path = rest.partition("/")
    if url.endswith("/"):
        return "must not end with /"
    if PERCENT_PROBLEM.search(path):
        return "has a % that is not followed by two hex digits"
    return origin_problem(scheme, authority, config)


def origin_problem(scheme: str, authority: str, config: Environment) -> str | None:
    """The rule for the `scheme://authority` part of any URL the plugin is told to call (a Dee
    Wan base URL, a notification endpoint): a port of 1 to 65535, a development origin listed in
    DEE_WAN_DEV_ORIGINS as it is, otherwise https and a public host (`host_problem`)."""
    host, colon, port = authority.partition(":")
    if host.startswith("["):
        host, _, after = authority.partition("]")
        host += "]"
        colon, port = after[:1], after[1:]
        if after and colon != ":":
            return "is not a valid URL"
    if colon and (not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535):
        return "must have a port from 1 to 65535 when it names one"
    origin = f"{scheme}://{authority}".lower()
    if config.is_development and origin in config.dev_origins:
        return None
    if scheme == "http":
        return "http:// is accepted only in development for origins in DEE_WAN_DEV_ORIGINS"
    return host_problem(host)


# Suffixes that the public DNS never answers for, so a name under one reaches whatever a
# local resolver, `/etc/hosts` or mDNS says: loopback, a router, a machine of the network.
# Special-use names (RFC 6761 `localhost`, `test`, `invalid`; RFC 6762 `local`; RFC 8375
# `home.arpa`, and the rest of `arpa`; RFC 7686 `onion`; RFC 9476 `alt`), ICANN's private-use
# `internal` (2024), and names networks use in-house that ICANN will not delegate because
# they collide (SAC 045/062: `home`, `corp`, `lan`, `intranet`, `private`, `localdomain`).
# RFC 6761's `example` stays: its names are for documentation, applications are asked not to
# treat them specially (§6.5), and no common local tooling answers for them.
INTERNAL_SUFFIXES = (
    "localhost",
    "local",
    "arpa",
    "internal",
    "intranet",
    "lan",
    "home",
    "corp",
    "private",
    "localdomain",
    "test",
    "invalid",
    "onion",
    "alt",
)


def host_problem(host: str) -> str | None:
    """None when `host` names a machine on the public internet; otherwise why not.

    The one rule for any host the plugin is told to call (a Dee Wan base URL; notification
    endpoints later): a DNS name of at least two labels, not an IP literal, not under a
    suffix only a local network answers for. Case does not matter.
    """
    host = host.lower()
    if not host:
        return "must have a host"
    if host.startswith("[") or _NUMERIC_LABEL.fullmatch(host.rpartition(".")[2]):
        return (
            "must name a host, not an IP address: an address may lead into the plugin's own"
            " network, so it calls only names the public DNS answers for (in development, an"
            " origin listed in DEE_WAN_DEV_ORIGINS is taken as it is)"
        )
    if len(host) > MAX_HOST_LENGTH:
        return f"must have a host of at most {MAX_HOST_LENGTH} characters"
    labels = host.split(".")
    if not all(_LABEL.fullmatch(label) and _valid_idna(label) for label in labels):
        return "must have a host of letters, digits and hyphens between dots"
    if labels[-1] == "localhost":
        return "must not name localhost"
    if len(labels) == 1:
        return (
            "must be a full domain name with a dot: a single label such as "
            f"{host!r} is looked up in the local network"
        )
    if labels[-1] in INTERNAL_SUFFIXES:
        suffix = "home.arpa" if labels[-2:] == ["home", "arpa"] else labels[-1]
        return f"must be a public name: .{suffix} names are answered only inside a network"
    return None


def _valid_idna(label: str) -> bool:
    """An `xn--` label must be the IDNA form of a name; `ab--` labels are reserved."""
    if label[2:4] != "--":
        return True
    if not label.startswith("xn--"):
        return False
    from encodings import idna  # with stringprep and unicodedata: for an `xn--` label only

    try:
        name = label[4:].encode("ascii").decode("punycode")
        return idna.ToASCII(name) == label.encode("ascii")
    except UnicodeError:
        return False
