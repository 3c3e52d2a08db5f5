"""Which IP addresses the plugin may connect to outside development: public ones only.

The host rules (`base_url.py`) judge a name as it is written; a public-looking name can
still resolve to 127.0.0.1 or a neighbour on the local network, and "Send test event" would
then say whether a port there is open. So where the plugin itself connects (the local
runtime; on Workers the platform cannot reach such addresses at all), the address a name
resolves to is checked at connect time.
"""

from __future__ import annotations

import ipaddress


def is_public(address: str) -> bool:
    """A globally routable unicast address: not loopback, private (RFC 1918), link-local,
    unique-local (fc00::/7), shared (100.64/10), reserved, documentation or multicast; an
    IPv4 address written in IPv6 is judged as itself."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast
