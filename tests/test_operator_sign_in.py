"""The operator's secret (issue 26, item 8): a secret with too little variety stops start-up,
and wrong secrets are counted per client as failed launch exchanges are: after ten in a
minute the client is held back (429 with `Retry-After`), its secret not even compared.

Through the public surface: the configuration's check, and `/admin` (HTTP Basic) and the
bearer routes on the in-process app, each request with the peer address a runtime reports.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable

import pytest

from scheduling.app import App
from scheduling.config import Configuration, ConfigurationError
from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS
from scheduling.http.requests import Headers, Request
from scheduling.http.responses import Response
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import ADMIN_SECRET, ORIGIN, FakeClock, base_env, body, make_app

ALICE = "203.0.113.7"
BOB = "198.51.100.23"


@pytest.mark.parametrize(
    "secret",
    ["aaaaaaaaaaaaaaaa", "abababababababababababab", "abcdabcdabcdabcdabcd", "1234567" * 4],
)
def test_a_secret_with_too_little_variety_is_refused_by_name_only(secret: str) -> None:
    config = Configuration.from_mapping(base_env(ADMIN_SECRET=secret))
    assert "too little variety" in config.problems["ADMIN_SECRET"]
    with pytest.raises(ConfigurationError) as raised:
        config.raise_for_problems()
    [line] = str(raised.value).splitlines()  # one line, naming the variable
    assert line.startswith("invalid configuration: ADMIN_SECRET: has too little variety")
    assert secret not in line


@pytest.mark.parametrize(
    "secret", [ADMIN_SECRET, "aB3$kq9Lz!Xp7wRt", "harness-operator-secret-0123456789"]
)
def test_a_secret_with_eight_different_characters_or_more_hard_to_guess_is_taken(
    secret: str,
) -> None:
    assert "ADMIN_SECRET" not in Configuration.from_mapping(base_env(ADMIN_SECRET=secret)).problems


@pytest.mark.parametrize(
    "secret",
    [
        "password12345678",  # a common word and a run
        "0123456789abcdef",  # two runs
        "qwertyuiqwertyui",  # a keyboard run, repeated
        "abcdefghabcdefgh",
        "Password-Password-1234",
        "zyxwvutsrqponmlk",
        # Issue 45, item 11: a keyboard walk across rows, a season with a year, and words
        # spelled with look-alike characters all started the server.
        "1q2w3e4r5t6y7u8i",
        "Summer2024!Summer",
        "zaq12wsxcde34rfv",
        "P@ssw0rd-W1nter-1987",
    ],
)
def test_an_admin_secret_easy_to_guess_is_refused_saying_how_to_make_one(secret: str) -> None:
    """Issue 37, item 3: each of these started the server."""
    config = Configuration.from_mapping(base_env(ADMIN_SECRET=secret))
    with pytest.raises(ConfigurationError) as raised:
        config.raise_for_problems()
    [line] = str(raised.value).splitlines()
    assert line.startswith("invalid configuration: ADMIN_SECRET: is too easy to guess")
    assert "openssl rand -base64 32" in line
    assert secret not in line


def test_random_admin_secrets_are_taken() -> None:
    # Seeded: an estimate can find a pattern by chance in about one random 16-character
    # secret of 25,000, which would make this test fail once in a hundred runs.
    chance = random.Random(45)
    for _ in range(200):
        secret = base64.b64encode(chance.randbytes(12)).decode()  # 16 characters
        assert (
            "ADMIN_SECRET" not in Configuration.from_mapping(base_env(ADMIN_SECRET=secret)).problems
        )


def basic(password: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"op:{password}".encode()).decode()}


def bearer(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


async def ask(
    app: App, path: str, headers: dict[str, str], client: str | None, method: str = "GET"
) -> Response:
    request = Request(method, f"{ORIGIN}{path}", Headers(headers), client=client)
    return await app.handle(request)


@pytest.mark.parametrize(
    ("path", "credentials"),
    [("/admin", basic), ("/admin/status", bearer), ("/admin/metrics", bearer)],
)
async def test_400_wrong_guesses_get_ten_answers_and_then_429_until_the_minute_is_over(
    db: SqliteDatabase, clock: FakeClock, path: str, credentials: Callable[[str], dict[str, str]]
) -> None:
    app = make_app(db, clock)
    statuses = [
        (await ask(app, path, credentials(f"guess-{n:04d}-abcdefgh"), ALICE)).status
        for n in range(400)
    ]
    assert statuses[: LAUNCH_FAILURES_PER_MINUTE + 1] == [401] * (LAUNCH_FAILURES_PER_MINUTE + 1)
    assert set(statuses[LAUNCH_FAILURES_PER_MINUTE + 1 :]) == {429}
    # Held back, the right secret is not compared either; another client gets in.
    held = await ask(app, path, credentials(ADMIN_SECRET), ALICE)
    assert held.status == 429
    assert body(held)["code"] == "too_many_attempts"
    assert 0 < int(held.header("retry-after") or "0") <= WINDOW_MS // 1000
    assert ADMIN_SECRET not in held.body.decode()
    assert (await ask(app, path, credentials(ADMIN_SECRET), BOB)).status == 200
    clock.advance(WINDOW_MS)
    assert (await ask(app, path, credentials(ADMIN_SECRET), ALICE)).status == 200


async def test_a_browser_before_its_challenge_and_the_right_secret_never_count(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    app = make_app(db, clock)
    for _ in range(3 * LAUNCH_FAILURES_PER_MINUTE):
        assert (await ask(app, "/admin", {}, ALICE)).status == 401  # no credentials yet
        assert (await ask(app, "/admin", basic(ADMIN_SECRET), ALICE)).status == 200
    for n in range(LAUNCH_FAILURES_PER_MINUTE):
        assert (await ask(app, "/admin/status", bearer(f"wrong-{n}-abcdefgh"), ALICE)).status == 401
    assert (await ask(app, "/admin/status", bearer(ADMIN_SECRET), ALICE)).status == 200


async def test_a_held_client_mints_nothing(db: SqliteDatabase, clock: FakeClock) -> None:
    app = make_app(db, clock)
    for n in range(LAUNCH_FAILURES_PER_MINUTE + 1):
        await ask(app, "/admin/activation-codes", bearer(f"wrong-{n}-abcdefgh"), ALICE, "POST")
    minted = await ask(app, "/admin/activation-codes", bearer(ADMIN_SECRET), ALICE, "POST")
    assert minted.status == 429
    assert db.connection.execute("SELECT count(*) FROM activation_codes").fetchone()[0] == 0
