"""Which IP addresses the plugin may connect to outside development: public ones only.

The host rules (`base_url.py`) judge a name as it is written; a public-looking name can
still resolve to 127.0.0.1 or a neighbour on the local network, and "Send test event" would
then say whether a port there is open. So where the plugin itself connects (the local
runtime; on Workers the platform cannot reach such addresses at all), the address a name
resolves to is checked at connect time. (A base URL or an endpoint URL may not be an IP
literal at all, in any spelling, so a resolved address is the only one ever judged.)

An IPv6 address can carry an IPv4 one that a translator or a tunnel dials on its behalf:
IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d` (SIIT, RFC 7915), NAT64
`64:ff9b::a.b.c.d` (RFC 6052) and 6to4 `2002:aabb:ccdd::/48` (RFC 3056). Each is judged by
the IPv4 address it carries, since `64:ff9b::7f00:1` reaches 127.0.0.1 through a NAT64
gateway.
"""

from __future__ import annotations

import ipaddress

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
        ip = ipaddress.ip_address(address.split("%", 1)[0])
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
