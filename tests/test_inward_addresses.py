"""Names that resolve inward (issue 26, item 7). The host rule judges a name as it is written;
on the local runtime, outside development, the address the name resolves to is checked when
the connection is made, and a loopback, private, link-local or unique-local one is never
dialled: "Send test event" then says so for an open port and a closed one alike.

Through the public surface (a manage page's "Send test event" on the in-process app whose
visitor pool is the real `outbound_client`), with the resolver answering 127.0.0.1 for a
public-looking name; and the network backend itself, on what it dials.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import pytest

from scheduling.domain.addresses import is_public
from scheduling.ports import AddressRefused, OutboundRequest, TransportError
from scheduling.runtimes.cpython.adapters import NotPublic, PublicAddressesOnly, outbound_client
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock
from tests.support.webhooks import add_endpoint
from tests.support.world import World

INWARD_NAME = "hooks.example.com"  # public-looking; this machine's resolver says 127.0.0.1


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("127.0.0.1", False),
        ("127.9.9.9", False),
        ("10.0.0.7", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # link-local: cloud metadata
        ("100.64.0.1", False),  # shared (carrier-grade NAT)
        ("0.0.0.0", False),  # noqa: S104 - an address judged, not bound
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1%eth0", False),  # link-local, with its zone
        ("fd00::1", False),  # unique-local
        ("::ffff:127.0.0.1", False),  # IPv4 in IPv6
        ("::ffff:93.184.215.14", True),
        # Issue 37, item 2: IPv6 forms that carry a private IPv4 address, judged by it.
        ("64:ff9b::7f00:1", False),  # NAT64 to 127.0.0.1
        ("64:ff9b::10.0.0.7", False),
        ("64:ff9b::93.184.215.14", True),  # NAT64 to a public address
        ("64:ff9b:1::7f00:1", False),  # local-use NAT64 (RFC 8215): refused whole
        ("64:ff9b:1::5db8:d70e", False),
        ("2002:7f00:1::1", False),  # 6to4 of 127.0.0.1
        ("2002:c0a8:101::1", False),  # 6to4 of 192.168.1.1
        ("2002:5db8:d70e::1", True),  # 6to4 of a public address
        # Issue 45, item 14: IPv4-translated (SIIT, RFC 6052/7915) was judged public.
        ("::ffff:0:127.0.0.1", False),
        ("::ffff:0:a00:7", False),  # 10.0.0.7
        ("::ffff:0:93.184.215.14", True),
        ("::127.0.0.1", False),  # IPv4-compatible (deprecated)
        ("::93.184.215.14", False),
        ("fec0::1", False),  # site-local
        ("fec0::1%eth0", False),
        ("2001:4860:4860::8888", True),  # a public IPv6 address carries no IPv4 one
        ("2001:4860:4860::8888%eth0", True),  # a zone (resolvers give one) changes nothing
        ("not an address", False),
    ],
)
def test_only_public_addresses_may_be_dialled(address: str, public: bool) -> None:
    assert is_public(address) is public


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[str]], None]:
    """Make the process's resolver answer `addresses` for `name` (the rest as it would)."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lambda name, addresses: answers.__setitem__(name, addresses)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """An open port on loopback that counts who connects (it never answers)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def connections_to(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            accepted, _ = sock.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


async def test_a_test_event_to_a_name_resolving_to_loopback_is_not_sent_open_port_or_not(
    db: SqliteDatabase,
    clock: FakeClock,
    resolver: Callable[[str, list[str]], None],
    listener: socket.socket,
) -> None:
    resolver(INWARD_NAME, ["127.0.0.1"])
    world = World(db, clock)
    world.app.services.visitor_http = outbound_client(max_connections=4, public_only=True)
    installation = await world.install()
    browser = await world.browser_for(installation, content_id=None)
    open_port = listener.getsockname()[1]
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    for port in (open_port, closed_port):
        url = f"https://{INWARD_NAME}:{port}/hook"
        await add_endpoint(browser, installation.id, url)
        [[endpoint_id]] = db.connection.execute(
            "SELECT id FROM notification_endpoints WHERE url = ?", (url,)
        ).fetchall()
        response = await browser.post(
            f"/installations/{installation.id}/notifications/{endpoint_id}/test",
            {"csrf_token": browser.csrf(), "opened_for": "manage"},
        )
        assert response.status == 303
    assert connections_to(listener) == 0  # nothing dialled, not even a TCP handshake
    page = (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    said = re.findall(r"data-test-result>([^<]*) at ", page)
    assert said == ["not called: its name leads to this machine or a private network"] * 2
    results = db.connection.execute("SELECT test_result FROM notification_endpoints").fetchall()
    assert {row[0] for row in results} == {"address_not_public"}


async def test_a_name_with_one_inward_address_among_public_ones_is_refused(
    resolver: Callable[[str, list[str]], None],
) -> None:
    resolver(INWARD_NAME, ["93.184.215.14", "10.0.0.7"])
    client = outbound_client(max_connections=1, public_only=True)
    with pytest.raises(AddressRefused):
        await client.send(OutboundRequest("POST", f"https://{INWARD_NAME}/hook", {}, b"{}", 2.0))
    await client.aclose()


@pytest.mark.parametrize("inward", ["64:ff9b::7f00:1", "2002:7f00:1::1", "fec0::1"])
async def test_a_name_resolving_to_an_ipv6_form_of_an_inward_address_is_not_dialled(
    resolver: Callable[[str, list[str]], None], inward: str
) -> None:
    """Issue 37, item 2: a production test event to a name resolving to a NAT64 address of
    127.0.0.1 was dialled."""
    resolver(INWARD_NAME, [inward])
    inner = Dialled()
    with pytest.raises(NotPublic):
        await PublicAddressesOnly(inner).connect_tcp(INWARD_NAME, 443)
    assert inner.addresses == []


class Dialled(httpcore.AsyncNetworkBackend):
    """Records the address it is asked to connect to, and connects nowhere."""

    def __init__(self) -> None:
        self.addresses: list[str] = []

    async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        self.addresses.append(host)
        raise httpcore.ConnectError("not in this test")


async def test_the_address_checked_is_the_address_dialled(
    resolver: Callable[[str, list[str]], None],
) -> None:
    """Resolved once: the connection does not ask the resolver again (a name could answer
    public to the check and 127.0.0.1 to the connection)."""
    resolver(INWARD_NAME, ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
    inner = Dialled()
    with pytest.raises(httpcore.ConnectError):
        await PublicAddressesOnly(inner).connect_tcp(INWARD_NAME, 443)
    assert inner.addresses == ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]


@pytest.mark.parametrize(("public_only", "dialled"), [(False, 1), (True, 0)])
async def test_in_development_the_address_is_not_judged(
    listener: socket.socket, public_only: bool, dialled: int
) -> None:
    """`ENVIRONMENT=development` calls its listed origins on loopback: no check there; the
    same call outside development is refused before it dials."""
    client = outbound_client(max_connections=1, public_only=public_only)
    port = listener.getsockname()[1]
    request = OutboundRequest("POST", f"http://localhost:{port}/hook", {}, b"{}", 0.5)
    with pytest.raises(AddressRefused if public_only else TransportError):
        await client.send(request)  # the listener never answers
    await client.aclose()
    assert connections_to(listener) == dialled
