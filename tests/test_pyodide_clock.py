"""An alarm clock per installation through the real Worker entry under Pyodide: with
`SCHEDULE_CLOCK` bound (the harness's Durable Object namespace, named as workerd's, whose
objects are the entry's own `ScheduleClock` class), the cron's watchdog tells each clock when
its installation has something due, and each clock's `alarm()`, its own invocation with its
own six connections, sends its rows at their second: none early, each once. Alarms dropped
or delivered twice change nothing but who sends. An alarm that settles a refusal tells the
endpoints in the same invocation."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from fake_core import Fault
from scheduling.domain.schedules import WATCHDOG_GRACE_MS
from tests.pyodide_harness.harness import FakeCoreProcess, Harness
from tests.support.d1_rows import installation_row, removal, schedule_row
from tests.support.loopback_core import Loopback, loopback_core
from tests.support.runtimes import added_endpoint, pyodide_runtime
from tests.support.webhooks import verify

pytestmark = pytest.mark.pyodide

SECOND = 1_000


@pytest.fixture
def dee_wan() -> Iterator[Loopback]:
    """Dee Wan on loopback, answering each command after 50 ms."""
    with loopback_core(0.05) as answering:
        yield answering


def seed(harness: Harness, dee_wan: Loopback, prefix: str, dues: dict[str, list[int]]) -> None:
    for installation, times in dues.items():
        sealed = harness.seal("dwp_" + "A" * 43, f"installation-token:{installation}")
        harness.execute(
            installation_row(installation, dee_wan.base_url, sealed),
            *(
                schedule_row(f"{installation}_s{i}", installation, f"cnt_{i}", due_at=due)
                for i, due in enumerate(times)
            ),
        )


def remove(harness: Harness, prefix: str) -> None:
    harness.execute(*removal(prefix))


def sent(harness: Harness, prefix: str) -> list[dict[str, Any]]:
    return harness.sql(
        "SELECT s.id, s.status, s.due_at, a.started_at FROM schedules s"
        " LEFT JOIN schedule_attempts a ON a.schedule_id = s.id WHERE s.id LIKE ?"
        " ORDER BY s.id, a.attempt",
        f"{prefix}_%",
    )


@contextlib.contextmanager
def clocks_on(harness: Harness, dee_wan: Loopback) -> Iterator[None]:
    """The Worker in development against `dee_wan`, with SCHEDULE_CLOCK bound."""
    with (
        harness.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=dee_wan.base_url),
        harness.bound_clock(),
    ):
        yield


def wait_until(ms: int) -> None:
    time.sleep(max(0.0, ms / 1000 - time.time()))


def test_each_clock_sends_its_rows_at_their_second_in_its_own_invocation(
    harness: Harness, dee_wan: Loopback
) -> None:
    prefix = "tc1"
    now = int(time.time() * 1000)
    start = (now // SECOND + 6) * SECOND
    dues = {f"{prefix}_a": [start, start + 1_500, start + 3_000], f"{prefix}_b": [start + 700]}
    seed(harness, dee_wan, prefix, dues)
    try:
        with clocks_on(harness, dee_wan):
            # The cron's watchdog tells the clocks (they were never told: rows written here).
            harness.scheduled(now)
            [watchdog] = harness.sql(
                "SELECT caught, clocks_rearmed FROM tick_history WHERE kind = 'tick'"
                " ORDER BY rowid DESC LIMIT 1"
            )
            assert watchdog == {"caught": 0, "clocks_rearmed": 2}
            clock = harness.clock()
            assert {name: o["stored"] for name, o in clock["objects"].items()} == {
                name: {"installation": name} for name in dues
            }
            wait_until(start + 3_000 + 2 * SECOND)
            clock = harness.clock(wait=True)
            rows = sent(harness, prefix)
    finally:
        remove(harness, prefix)

    assert {r["status"] for r in rows} == {"completed"}
    assert len(rows) == 4  # one attempt each
    assert all(r["started_at"] >= r["due_at"] for r in rows)  # none before its second
    assert Counter(dee_wan.keys) == {
        f"sched:{r['id'].rsplit('_s', 1)[0]}:{r['id']}:r1": 1 for r in rows
    }
    alarms = clock["alarms"]
    assert {a["name"] for a in alarms} == set(dues)
    assert not any(a["threw"] for a in alarms)
    assert all(a["started"] >= a["set_for"] for a in alarms)  # an alarm never comes early
    assert harness.fetch_stats()["max_waiting_for_headers"] <= 6


def test_an_alarm_dropped_or_delivered_twice_and_each_row_is_still_sent_once(
    harness: Harness, dee_wan: Loopback
) -> None:
    prefix = "tc2"
    now = int(time.time() * 1000)
    start = (now // SECOND + 5) * SECOND
    dropped, doubled = f"{prefix}_dropped", f"{prefix}_doubled"
    seed(harness, dee_wan, prefix, {dropped: [start, start], doubled: [start, start]})
    try:
        with clocks_on(harness, dee_wan):
            harness.scheduled(now)
            harness.clock(drop=[dropped], twice=[doubled])
            wait_until(start + 2 * SECOND)
            clock = harness.clock(wait=True)
            assert clock["dropped"] == 1
            assert [a["name"] for a in clock["alarms"]] == [doubled, doubled]
            assert {r["status"] for r in sent(harness, f"{prefix}_doubled")} == {"completed"}
            assert {r["status"] for r in sent(harness, f"{prefix}_dropped")} == {"pending"}
            # The watchdog, once they are overdue past its grace: it wakes the clock that
            # lost its alarm and sends what it can itself; nothing goes twice.
            harness.scheduled(start + WATCHDOG_GRACE_MS + SECOND)
            harness.clock(wait=True)
            [watchdog] = harness.sql(
                "SELECT caught, clocks_rearmed FROM tick_history WHERE kind = 'tick'"
                " ORDER BY rowid DESC LIMIT 1"
            )
            rows = sent(harness, prefix)
    finally:
        remove(harness, prefix)

    assert watchdog["clocks_rearmed"] == 1
    assert {r["status"] for r in rows} == {"completed"}
    assert len(rows) == 4
    assert all(r["started_at"] >= r["due_at"] for r in rows)
    assert sorted(Counter(dee_wan.keys).values()) == [1, 1, 1, 1]


async def test_the_alarm_that_settles_a_refusal_tells_it_in_the_same_invocation(
    worker: Harness, core: FakeCoreProcess
) -> None:
    """The installation's clock's `alarm()` sends, settles and then delivers the event its
    settle wrote, in the same invocation, signed with WebCrypto."""
    harness = worker  # from an empty database: the alarm finds this test's rows alone
    async with pyodide_runtime(harness, core) as runtime:
        installation_id = await runtime.install()
        with runtime.receiver() as receiver:
            _, secret = await added_endpoint(runtime, installation_id, receiver.url)
            editor = await runtime.open_page(installation_id, content_id=runtime.content)
            await editor.create(installation_id, runtime.noon(2))
            runtime.fault(Fault.respond(409, "workflow_conflict"))
            soon = int(time.time() * 1000) + 2 * SECOND  # its second, moved near
            move = "UPDATE schedules SET due_at = ?, next_attempt_at = ? WHERE installation_id = ?"
            await runtime.execute(move, soon, soon, installation_id)
            alarms = len(harness.events("runner_alarm"))
            with harness.bound_clock():
                harness.clock(tell=[installation_id])
                wait_until(soon + SECOND)
                harness.clock(wait=True)
            [delivery] = receiver.received
    event = verify(secret, delivery)  # standardwebhooks, its time window included
    assert (event["type"], event["data"]["result_code"]) == (
        "schedule.refused",
        "workflow_conflict",
    )
    [settling] = [line for line in harness.events("runner_alarm")[alarms:] if line["refused"]]
    assert settling["delivery_events"] == settling["deliveries_delivered"] == 1
