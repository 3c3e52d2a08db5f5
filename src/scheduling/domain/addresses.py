"""Where the plugin may connect: a Dee Wan base URL (protocol §3), a notification endpoint's
URL, and the IP addresses their names resolve to.

A URL is `https://`, printable ASCII, with no credentials, fragment or backslash, and a host
that the public DNS can answer: no IP literal in any spelling, no single label, no name only
a local network answers. A public-looking name can still resolve to a private address, so
where the plugin itself connects, the address is judged again at connect time (an IPv6
address by the IPv4 one it carries). In development an exact origin listed in
`DEE_WAN_DEV_ORIGINS` is accepted as it is.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Protocol

# -- IP addresses ----------------------------------------------------------------------------------

# Each carries an IPv4 address in its last 32 bits: NAT64, and SIIT's IPv4-translated form.
_CARRIERS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("::ffff:0:0:0/96"))
# Refused whole: where a local-use prefix leads only this network's translator knows
# (RFC 8215); IPv4-compatible addresses are deprecated (RFC 4291) and lead nowhere public;
# site-local (fec0::/10) is deprecated but still routed within some sites.
_REFUSED = (
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("fec0::/10"),
)


def is_public(address: str) -> bool:
    """A globally routable unicast address: not loopback, private (RFC 1918), link-local,
    site-local, unique-local (fc00::/7), shared (100.64/10), reserved, documentation or
    multicast; an IPv6 address that carries an IPv4 one is judged by it."""
    try:
        ip = ipaddress.ip_address(address)  # an IPv6 zone (`%eth0`) is read, and judged alike
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in _REFUSED):
            return False
        carried = _carried_ipv4(ip)
        if carried is not None:
            return _is_public_unicast(carried)
    return _is_public_unicast(ip)


def _carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in carrier for carrier in _CARRIERS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


def _is_public_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast


# -- Dee Wan base URLs -----------------------------------------------------------------------------

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
    "localhost", "local", "arpa", "internal", "intranet", "lan", "home", "corp", "private",
    "localdomain", "test", "invalid", "onion", "alt",
)  # fmt: skip


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


# -- endpoint URLs ---------------------------------------------------------------------------------

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
