"""The base URL rule and an endpoint's URL rule on known inputs, each refusal word for word,
at the edges mutation runs found untried: ports 1 and 65535 (0 and 65536 refused), a host of
exactly 253 characters (254 refused), labels of 63 (64 refused), the printable range's ends
(`!`, `~`) and the characters just outside it, development origins matched exactly, and where
an endpoint's host ends."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from scheduling.domain.addresses import (
    base_url_problem,
    endpoint_url_problem,
    host_problem,
    origin_problem,
)


@dataclass(frozen=True)
class Env:
    is_development: bool = False
    dev_origins: tuple[str, ...] = ()


PROD = Env(dev_origins=("http://localhost:8787", "https://vm:41853"))
DEV = Env(
    True,
    (
        "http://localhost:8787",
        "https://vm:41853",
        "https://[::1]:8443",
        "https://cms.internal:8443",
    ),
)

PORT = "must have a port from 1 to 65535 when it names one"
CHARACTERS = "must be printable ASCII with no whitespace"
PARTS = "must not contain credentials, a query, a fragment or a backslash"
SCHEME = "must start with https://"
SLASH = "must not end with /"
PERCENT = "has a % that is not followed by two hex digits"
IP = (
    "must name a host, not an IP address: an address may lead into the plugin's own network,"
    " so it calls only names the public DNS answers for (in development, an origin listed in"
    " DEE_WAN_DEV_ORIGINS is taken as it is)"
)
LABELS = "must have a host of letters, digits and hyphens between dots"
HTTP = "http:// is accepted only in development for origins in DEE_WAN_DEV_ORIGINS"


def single(label: str) -> str:
    return (
        "must be a full domain name with a dot: a single label such as "
        f"'{label}' is looked up in the local network"
    )


def internal(suffix: str) -> str:
    return f"must be a public name: .{suffix} names are answered only inside a network"


# 253 characters: three labels of 63, one of 57 and `com`, four dots.
LONGEST = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 57, "com"])


@pytest.mark.parametrize(
    "url",
    [
        "https://cms.example",
        "HTTPS://CMS.Example/Dee-Wan",
        "https://cms.example:1",
        "https://cms.example:443",
        "https://cms.example:65535",
        "https://cms.example:00443",
        "https://cms.example/!",  # the printable range's first character
        "https://cms.example/~",  # and its last
        "https://cms.example/a%2f%41/b",
        "https://c-m.example",
        "https://1cms.example",
        "https://" + "a" * 63 + ".example",
        "https://" + LONGEST,
        "https://xn--bcher-kva.example",
        "https://XN--BCHER-KVA.example",
        "https://cms.123.example",
        "https://local.cms.example",
        "https://cms.localhost.example",
        "https://a.b",
        "https://cms.example/x://y",  # the scheme ends at the first "://"
    ],
)
def test_accepted(url: str) -> None:
    assert base_url_problem(url, PROD) is None
    assert base_url_problem(url, DEV) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://cms.example:0", PORT),
        ("https://cms.example:65536", PORT),
        ("https://cms.example:99999", PORT),
        ("https://cms.example:123456", PORT),
        ("https://cms.example:", PORT),
        ("https://cms.example:+443", PORT),
        ("https://cms.example:44a", PORT),
        ("https://cms.example/ ", CHARACTERS),  # just before `!`
        ("https://cms.example/\x7f", CHARACTERS),  # just after `~`
        ("https://cms.example/\t", CHARACTERS),
        ("https://bücher.example", CHARACTERS),
        ("https://user@cms.example", PARTS),
        ("https://cms.example?x=1", PARTS),
        ("https://cms.example#top", PARTS),
        ("https://cms.example\\x", PARTS),
        ("ftp://cms.example", SCHEME),
        ("cms.example", SCHEME),
        ("https:/cms.example", SCHEME),
        ("https://cms.example/", SLASH),
        ("https://cms.example/a/", SLASH),
        ("https://", SLASH),
        ("https://cms.example/a%zz", PERCENT),
        ("https://cms.example/a%2", PERCENT),
        ("https://cms.example/%", PERCENT),
        ("https://:443", "must have a host"),
        ("https://[::1]", IP),
        ("https://[::1]:8443", IP),
        ("https://[::1]x", "is not a valid URL"),
        ("https://[::1]:", PORT),
        ("https://[::1]:65536", PORT),  # the port after "]:", whole
        ("https://[::1]]:8443", "is not a valid URL"),  # the host ends at the first "]"
        ("https://10.0.0.7", IP),
        ("https://127.1", IP),
        ("https://0x7f.1", IP),
        ("https://cms.0x", IP),
        ("https://2130706433", IP),
        ("https://a.b.123", IP),  # the last label is what a browser reads as a number
        ("https://" + LONGEST[:-3] + "comm", "must have a host of at most 253 characters"),
        ("https://" + "a" * 64 + ".example", LABELS),
        ("https://a..b", LABELS),
        ("https://cms.example.", LABELS),
        ("https://-cms.example", LABELS),
        ("https://cms-.example", LABELS),
        ("https://cms_1.example", LABELS),
        ("https://xn--zz.example", LABELS),
        ("https://ab--c.example", LABELS),
        ("https://localhost", "must not name localhost"),
        ("https://cms.localhost", "must not name localhost"),
        ("https://intranet", single("intranet")),
        ("https://Intranet:8080", single("intranet")),
        ("https://xn--bcher-kva", single("xn--bcher-kva")),
        ("https://cms.local", internal("local")),
        ("https://nas.home.arpa", internal("home.arpa")),
        ("https://home.arpa", internal("home.arpa")),
        ("https://1.0.0.10.in-addr.arpa", internal("arpa")),
        ("https://CMS.Internal:8443/dee-wan", internal("internal")),
        ("https://cms.onion", internal("onion")),
        ("http://cms.example", HTTP),
        ("http://localhost:8787", HTTP),  # listed, but not in development
    ],
)
def test_refused_with_why(url: str, problem: str) -> None:
    assert base_url_problem(url, PROD) == problem


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8787",
        "HTTP://LOCALHOST:8787",
        "https://vm:41853",
        "https://[::1]:8443",
        "https://cms.internal:8443/core",
    ],
)
def test_a_listed_origin_is_accepted_as_it_is_in_development(url: str) -> None:
    assert base_url_problem(url, DEV) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://localhost:8788", HTTP),  # another port
        ("https://localhost:8787", "must not name localhost"),  # another scheme
        ("https://vm:41854", single("vm")),
        ("https://vm", single("vm")),
        ("https://[::1]:8444", IP),
        ("https://cms.internal", internal("internal")),
        ("https://cms.example:0", PORT),  # the port rule comes first
    ],
)
def test_only_the_exact_listed_origin(url: str, problem: str) -> None:
    assert base_url_problem(url, DEV) == problem


def test_the_origin_and_host_rules_alone() -> None:
    assert origin_problem("https", "cms.example:8443", PROD) is None
    assert origin_problem("https", "cms.example:0", PROD) == PORT
    assert origin_problem("http", "localhost:8787", DEV) is None
    assert origin_problem("https", "[::1]:8443", DEV) is None
    assert origin_problem("https", "[::1]", DEV) == IP
    assert host_problem("CMS.Example") is None
    assert host_problem("") == "must have a host"
    assert host_problem("LOCALHOST") == "must not name localhost"


HOOK = "https://hooks.example.com/"
FRAGMENT = "must not contain a backslash or a fragment (#)"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (HOOK + "a" * (2048 - len(HOOK)), None),
        (HOOK + "a" * (2049 - len(HOOK)), "must be at most 2048 bytes long"),
        # 2,048 characters, 2,049 bytes: the limit is the bytes.
        (HOOK + "a" * (2047 - len(HOOK)) + "é", "must be at most 2048 bytes long"),
        ("", "must be given"),
        (HOOK + "!~", None),
        (HOOK + " x", CHARACTERS),
        (HOOK + "\x7f", CHARACTERS),
        (HOOK + "a\\b", FRAGMENT),
        (HOOK + "#top", FRAGMENT),
        ("hooks.example.com/x", SCHEME),
        ("ftp://hooks.example.com/", SCHEME),
        ("HTTPS://hooks.example.com/", None),
        ("http://hooks.example.com/", HTTP),
        ("https://u:p@hooks.example.com/", "must not contain credentials"),
        (HOOK + "a@b", None),  # an @ after the host is the path's
        (HOOK + "a/b?c=d?e", None),  # the host ends at the first / or ?
        ("https://hooks.example.com?c=d?e/f", None),
        (HOOK + "?next=https://elsewhere.example", None),  # the scheme is the first
        ("https://hooks.example.com?to=a@b", None),  # or the query's
        ("https:///x", "must have a host"),
        ("https://?x", "must have a host"),
        (HOOK + "%zz", PERCENT),
        ("https://hooks.example.com?%4", PERCENT),
        (HOOK + "%41", None),
        ("https://hooks.example.com", None),
        ("https://hooks.example.com:8443/x?y=1", None),
        ("https://hooks.example.com:0/x", PORT),
        ("https://10.0.0.1/x", IP),
    ],
)
def test_an_endpoint_url_is_refused_with_why(url: str, problem: str | None) -> None:
    assert endpoint_url_problem(url, PROD) == problem


def test_an_endpoint_url_may_be_a_listed_origin_in_development() -> None:
    assert endpoint_url_problem("http://localhost:8787/hook", DEV) is None
    assert endpoint_url_problem("http://localhost:8787/hook", PROD) == HTTP
