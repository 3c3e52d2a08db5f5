"""Anonymous launch guesses under Pyodide (issue 17): the real Worker entry counts failed
launch exchanges by `CF-Connecting-IP`, in the isolate or through a Rate Limiting binding
(the harness's `Ratelimit` stand-in, converted by the SDK as workerd's is), and answers 429
with `Retry-After` past the limit without calling Dee Wan (`python -m fake_core`)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, MAX_IN_FLIGHT
from tests.pyodide_harness.harness import (
    ADMIN_SECRET,
    FakeCoreProcess,
    Harness,
    node_path,
    shared_harness,
)

pytestmark = pytest.mark.pyodide

ALICE = "203.0.113.7"
BOB = "198.51.100.23"
TABLES = ("schedule_attempts", "schedules", "sessions", "activation_codes", "installations")


@pytest.fixture(scope="module")
def core() -> Iterator[FakeCoreProcess]:
    if node_path() is None:
        pytest.skip("node is not installed: the Pyodide harness needs Node 20+")
    harness = shared_harness()
    process = FakeCoreProcess(harness.origin, Path(harness.workdir) / "fake_core_limits.log")
    yield process
    process.close()


@pytest.fixture
def worker(core: FakeCoreProcess) -> Iterator[Harness]:
    """Development mode (fake core's base URL is http://localhost), an empty database."""
    harness = shared_harness()
    harness.execute(*((f"DELETE FROM {table}", []) for table in TABLES))
    core.control("POST", "reset")
    core.control("POST", "seed", {"demo": True})
    with harness.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url):
        yield harness


@pytest.fixture
def client(worker: Harness) -> Iterator[httpx.Client]:
    with worker.client(follow_redirects=False) as http:
        yield http


def install(core: FakeCoreProcess, client: httpx.Client) -> str:
    """Fake core installs the Worker with a fresh activation code; the installation's id."""
    minted = client.post(
        "/admin/activation-codes", headers={"authorization": f"Bearer {ADMIN_SECRET}"}, json={}
    )
    assert minted.status_code == 201, minted.text
    answer = core.control("POST", "install", {"code": minted.json()["code"]})
    assert answer["code"] == "installed", answer
    installation_id: str = answer["installation"]["id"]
    return installation_id


def guess(installation_id: str) -> str:
    return f"/installations/{installation_id}?dee_wan_launch=dwl_{secrets.token_urlsafe(32)}"


def real_link(core: FakeCoreProcess, installation_id: str) -> str:
    """A manage launch, which Dee Wan offers to site admins only."""
    issued = core.control(
        "POST", "launch", {"installation_id": installation_id, "person_id": "usr_admin"}
    )
    url: str = issued["url"]
    return url


def exchange_calls(core: FakeCoreProcess) -> int:
    return len(core.control("GET", "calls", endpoint="exchange")["calls"])


def from_client(address: str) -> dict[str, str]:
    """What Cloudflare's edge adds for a client at `address`."""
    return {"cf-connecting-ip": address}


def test_without_a_binding_the_isolate_holds_guessers_back(
    worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    installation_id = install(core, client)
    most = LAUNCH_FAILURES_PER_MINUTE + 1
    answers = [client.get(guess(installation_id), headers=from_client(ALICE)) for _ in range(300)]

    assert [a.status_code for a in answers] == [401] * most + [429] * (300 - most)
    assert exchange_calls(core) == most
    held = answers[-1]
    assert 'data-error-code="too_many_launches"' in held.text
    assert 1 <= int(held.headers["retry-after"]) <= 60
    assert "set-cookie" not in held.headers

    # Alice's real link is not sent to Dee Wan while she is held back; Bob's opens.
    assert (
        client.get(real_link(core, installation_id), headers=from_client(ALICE)).status_code == 429
    )
    assert exchange_calls(core) == most
    opened = client.get(real_link(core, installation_id), headers=from_client(BOB))
    assert opened.status_code == 303, opened.text
    assert worker.sql("SELECT count(*) AS n FROM sessions") == [{"n": 1}]


def test_with_the_binding_its_count_decides_and_only_failures_reach_it(
    worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    installation_id = install(core, client)
    with worker.launch_limiter(3):
        # A person launching again and again is never counted.
        for _ in range(5):
            assert (
                client.get(real_link(core, installation_id), headers=from_client(ALICE)).status_code
                == 303
            )
        answers = [
            client.get(guess(installation_id), headers=from_client(ALICE)) for _ in range(50)
        ]
        assert [a.status_code for a in answers] == [401] * 4 + [429] * 46
        assert exchange_calls(core) == 5 + 4
        calls = worker.rate_limiter()["calls"]
        key = f"launch:{installation_id}:{ALICE}"
        assert calls == [{"key": key, "success": s} for s in (True, True, True, False)]

        # Another client gets in; with no CF-Connecting-IP of the test's own the harness
        # plays the edge and reports the peer's address.
        assert (
            client.get(real_link(core, installation_id), headers=from_client(BOB)).status_code
            == 303
        )
        assert client.get(guess(installation_id)).status_code == 401
        assert worker.rate_limiter()["calls"][-1] == {
            "key": f"launch:{installation_id}:127.0.0.1",
            "success": True,
        }

        # The binding's window ends, but this isolate holds Alice back for its own minute.
        worker.rate_limiter(reset=True)
        assert client.get(guess(installation_id), headers=from_client(ALICE)).status_code == 429
        assert len(worker.rate_limiter()["calls"]) == 5


def test_guesses_sent_at_once_are_capped_in_flight(
    worker: Harness, core: FakeCoreProcess, client: httpx.Client
) -> None:
    installation_id = install(core, client)
    urls = [guess(installation_id) for _ in range(100)]
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda url: client.get(url, headers=from_client(ALICE)), urls))
    answers += [client.get(guess(installation_id), headers=from_client(ALICE)) for _ in range(15)]

    calls = exchange_calls(core)
    assert LAUNCH_FAILURES_PER_MINUTE + 1 <= calls <= LAUNCH_FAILURES_PER_MINUTE + MAX_IN_FLIGHT
    assert sorted(a.status_code for a in answers) == [401] * calls + [429] * (115 - calls)
    assert all(a.headers.get("retry-after") for a in answers if a.status_code == 429)
    assert int(answers[-1].headers["retry-after"]) > 1  # held back, not merely crowded
