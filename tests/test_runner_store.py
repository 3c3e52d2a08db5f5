"""The lease contract (the leases store), on SQLite and on Miniflare's D1 through the Workers
adapter.

`any_db` runs every test twice. The D1 database is shared by the test session,
so each test works with installations of its own and at instants in 1970,
before any other test's rows are due; it removes its rows afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from scheduling.domain.claims import DueRow, SettledClaim
from scheduling.domain.retry_policy import Settlement
from scheduling.domain.schedule import Attempt
from scheduling.domain.statuses import Status
from scheduling.ports import Database
from scheduling.repository.leases import Leases
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips

NOW = 10_000_000  # 1970: only this test's rows are due then
LEASE_MS = 60_000


@dataclass
class Setup:
    db: Database
    store: Leases
    trips: RoundTrips
    prefix: str

    def installation(self, n: int) -> str:
        return f"{self.prefix}_ins{n}"

    async def schedule(
        self,
        installation: int,
        n: int,
        *,
        ready_at: int = NOW,
        status: str = "pending",
        lease_until: int | None = None,
        attempts: int = 0,
    ) -> str:
        schedule_id = f"{self.prefix}_s{installation}_{n}"
        running = status == "running"
        await (
            self.db.prepare(
                "INSERT INTO schedules (id, installation_id, content_id, kind, to_state,"
                " version_id, workflow_revision, revision, idempotency_key, due_at, timezone,"
                " local_time, status, attempt_count, next_attempt_at, lease_token, lease_until,"
                " requested_by, requested_by_name, created_at, updated_at)"
                " VALUES (?, ?, ?, 'publish', 'published', 'ver_1', 1, 1, ?, ?, 'UTC', 'x',"
                " ?, ?, ?, ?, ?, 'usr', 'Ada', 0, 0)"
            )
            .bind(
                schedule_id,
                self.installation(installation),
                f"cnt_{n}",
                f"key:{schedule_id}",
                ready_at,
                status,
                attempts,
                None if running else ready_at,
                "old-lease" if running else None,
                lease_until if running else None,
            )
            .run()
        )
        return schedule_id

    async def row(self, schedule_id: str) -> dict[str, object]:
        found = (
            await self.db.prepare("SELECT * FROM schedules WHERE id = ?").bind(schedule_id).first()
        )
        assert found is not None
        return found

    async def attempts(self, schedule_id: str) -> list[dict[str, object]]:
        return (
            await self.db.prepare(
                "SELECT attempt, started_at, finished_at, code, http_status FROM schedule_attempts"
                " WHERE schedule_id = ? ORDER BY attempt"
            )
            .bind(schedule_id)
            .all()
        ).results


@pytest.fixture
async def setup(any_db: Database) -> AsyncIterator[Setup]:
    prefix = "t" + uuid.uuid4().hex[:10]
    for n in range(3):
        await (
            any_db.prepare(
                "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
                " token_rotated_at) VALUES (?, 'site', 'https://cms.example', 'sealed', 0, 0)"
            )
            .bind(f"{prefix}_ins{n}")
            .run()
        )
    trips = RoundTrips(any_db)
    outbox = Outbox(trips)
    yield Setup(any_db, Leases(trips, outbox), trips, prefix)
    like = f"{prefix}_%"
    await any_db.batch(
        [
            any_db.prepare("DELETE FROM schedule_attempts WHERE schedule_id LIKE ?").bind(like),
            any_db.prepare("DELETE FROM schedules WHERE id LIKE ?").bind(like),
            any_db.prepare("DELETE FROM installations WHERE id LIKE ?").bind(like),
        ]
    )


def ids(rows: list[DueRow]) -> list[str]:
    return [row.id for row in rows]


async def test_due_is_pending_or_retrying_whose_time_came_and_running_whose_lease_expired(
    setup: Setup,
) -> None:
    ready = await setup.schedule(0, 1, ready_at=NOW)
    later = await setup.schedule(0, 2, ready_at=NOW + 1)
    crashed = await setup.schedule(0, 3, status="running", lease_until=NOW - 1, attempts=1)
    leased = await setup.schedule(0, 4, status="running", lease_until=NOW + 1, attempts=1)
    due = await setup.store.due(NOW, 20)
    assert set(ids(due)) == {ready, crashed}
    assert later not in ids(due)
    assert leased not in ids(due)


async def test_due_takes_installations_round_robin_oldest_first_within_each(setup: Setup) -> None:
    busy = [await setup.schedule(0, n, ready_at=NOW - 100 + n) for n in range(5)]
    quiet = await setup.schedule(1, 0, ready_at=NOW)
    third = [await setup.schedule(2, n, ready_at=NOW - 50 + n) for n in range(2)]
    due = ids(await setup.store.due(NOW, 5))
    # Every installation's first row, then every second one, each turn by readiness.
    assert due == [busy[0], third[0], quiet, busy[1], third[1]]


async def test_a_claim_wins_once_sets_the_lease_and_opens_the_attempt(setup: Setup) -> None:
    schedule_id = await setup.schedule(0, 1)
    seen = await setup.store.due(NOW, 20)
    won, refused = await setup.store.claim(seen, [], "lease-a", NOW, LEASE_MS)
    assert ([c.row.id for c in won], [c.attempt for c in won], refused) == ([schedule_id], [1], [])
    again, _ = await setup.store.claim(seen, [], "lease-b", NOW, LEASE_MS)  # same observation
    assert again == []
    row = await setup.row(schedule_id)
    assert (row["status"], row["lease_token"], row["lease_until"], row["attempt_count"]) == (
        "running",
        "lease-a",
        NOW + LEASE_MS,
        1,
    )
    assert row["next_attempt_at"] is None
    assert await setup.attempts(schedule_id) == [
        {"attempt": 1, "started_at": NOW, "finished_at": None, "code": None, "http_status": None}
    ]


async def test_a_crashed_claim_is_reclaimed_on_its_expired_lease(setup: Setup) -> None:
    schedule_id = await setup.schedule(0, 1, status="running", lease_until=NOW - 1, attempts=1)
    await (
        setup.db.prepare(
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at) VALUES (?, 1, 0)"
        )
        .bind(schedule_id)
        .run()
    )
    [seen] = await setup.store.due(NOW, 20)
    won, _ = await setup.store.claim([seen], [], "lease-new", NOW, LEASE_MS)
    assert [c.attempt for c in won] == [2]
    assert [a["attempt"] for a in await setup.attempts(schedule_id)] == [1, 2]


async def test_refusing_unsent_ends_the_row_on_what_was_observed_without_an_attempt(
    setup: Setup,
) -> None:
    first = await setup.schedule(0, 1)
    changed = await setup.schedule(0, 2)
    seen = {row.id: row for row in await setup.store.due(NOW, 20)}
    await (
        setup.db.prepare("UPDATE schedules SET attempt_count = 3 WHERE id = ?").bind(changed).run()
    )
    won, refused = await setup.store.claim(
        [],
        [(seen[first], "token_unreadable", None), (seen[changed], "token_unreadable", None)],
        "lease",
        NOW,
        LEASE_MS,
    )
    assert (won, refused) == ([], [first])
    assert ((await setup.row(first))["status"], (await setup.row(first))["result_code"]) == (
        "refused",
        "token_unreadable",
    )
    assert (await setup.row(changed))["status"] == "pending"  # someone else's change wins
    assert await setup.attempts(first) == []


async def test_a_settle_applies_only_under_its_own_lease(setup: Setup) -> None:
    kept, taken = await setup.schedule(0, 1), await setup.schedule(0, 2)
    won, _ = await setup.store.claim(await setup.store.due(NOW, 20), [], "lease-a", NOW, LEASE_MS)
    await (
        setup.db.prepare("UPDATE schedules SET lease_token = 'lease-z' WHERE id = ?")
        .bind(taken)
        .run()
    )
    settles = [
        SettledClaim(
            c,
            Settlement(Status.COMPLETED, "transition_applied", None),
            Attempt(c.attempt, NOW + 5, NOW + 9, "transition_applied", 200),
        )
        for c in won
    ]
    assert await setup.store.settle("lease-a", settles, NOW + 10) == [taken]
    done = await setup.row(kept)
    assert (done["status"], done["lease_token"], done["lease_until"]) == ("completed", None, None)
    assert (await setup.row(taken))["lease_token"] == "lease-z"  # the new runner's row, untouched
    assert await setup.attempts(kept) == [
        {
            "attempt": 1,
            "started_at": NOW + 5,
            "finished_at": NOW + 9,
            "code": "transition_applied",
            "http_status": 200,
        }
    ]


async def test_an_unsent_settle_drops_the_attempt_and_gives_it_back(setup: Setup) -> None:
    schedule_id = await setup.schedule(0, 1)
    [claim], _ = await setup.store.claim(await setup.store.due(NOW, 20), [], "lease", NOW, LEASE_MS)
    await setup.store.settle(
        "lease",
        [SettledClaim(claim, Settlement(Status.REFUSED, "retry_exhausted", None), None)],
        NOW + 1,
    )
    row = await setup.row(schedule_id)
    assert (row["status"], row["result_code"], row["attempt_count"]) == (
        Status.REFUSED,
        "retry_exhausted",
        0,
    )
    assert await setup.attempts(schedule_id) == []


async def test_fifty_rows_claim_and_settle_in_one_round_trip_each_under_the_parameter_limit(
    setup: Setup,
) -> None:
    made = [await setup.schedule(n % 3, n) for n in range(50)]
    seen = await setup.store.due(NOW, 50)
    trips, statements = setup.trips.round_trips, setup.trips.statements
    won, _ = await setup.store.claim(seen, [], "lease", NOW, LEASE_MS)
    assert sorted(c.row.id for c in won) == sorted(made)
    settles = [
        SettledClaim(
            c,
            Settlement(Status.RETRYING, "timeout", NOW + 30_000),
            Attempt(c.attempt, NOW, NOW + 1, "timeout", None),
        )
        for c in won
    ]
    assert await setup.store.settle("lease", settles, NOW + 2) == []
    assert await setup.store.due(NOW + 2, 50) == []  # retries wait for their backoff
    assert setup.trips.round_trips - trips == 3
    assert setup.trips.statements - statements > 4  # chunked: D1 refuses over 100 parameters
    retrying = (
        await setup.db.prepare(
            "SELECT count(*) AS n FROM schedules WHERE id LIKE ? AND status = 'retrying'"
            " AND next_attempt_at = ?"
        )
        .bind(f"{setup.prefix}_%", NOW + 30_000)
        .first()
    )
    assert retrying == {"n": 50}


# -- the per-installation cap in the claim (the clocks, the watchdog), hand-backs --


async def test_a_capped_claim_never_takes_an_installation_past_its_cap(setup: Setup) -> None:
    for n in range(2):  # two live claims of installation 0 already, by another runner
        await setup.schedule(0, 100 + n, status="running", lease_until=NOW + LEASE_MS)
    await setup.schedule(0, 200, status="running", lease_until=NOW)  # expired: not live
    mine = [await setup.schedule(0, n) for n in range(10)]
    other = await setup.schedule(1, 1)
    seen = await setup.store.due(NOW, 20)
    assert len(seen) == 12  # the expired lease is due again
    won, _, held = await setup.store.claim_within(seen, [], "lease-a", NOW, LEASE_MS, 4)
    # Room for two of installation 0 (four minus the two live), and the other's one.
    assert sorted(c.row.installation_id for c in won) == [setup.installation(0)] * 2 + [
        setup.installation(1)
    ]
    assert len(held) == 9
    assert other not in held
    rest = [row for row in seen if row.id in held]
    again, _, held_again = await setup.store.claim_within(rest, [], "lease-b", NOW, LEASE_MS, 4)
    assert (again, sorted(held_again)) == ([], sorted(held))
    live = (
        await setup.db.prepare(
            "SELECT count(*) AS n FROM schedules WHERE installation_id = ? AND status = 'running'"
            " AND lease_until > ?"
        )
        .bind(setup.installation(0), NOW)
        .first()
    )
    assert live == {"n": 4}
    # Settling frees the room: the held rows are claimed next.
    settles = [
        SettledClaim(c, Settlement(Status.COMPLETED, "transition_applied", None), None) for c in won
    ]
    await setup.store.settle("lease-a", settles, NOW)
    freed, _, _ = await setup.store.claim_within(rest, [], "lease-c", NOW, LEASE_MS, 4)
    assert len(freed) == 2
    assert all(c.row.id in mine or c.row.id.endswith("_200") for c in freed)


async def test_the_cap_holds_across_the_statements_of_one_claim(setup: Setup) -> None:
    """Thirty candidates of one installation take two claim statements (D1's 100 bound
    parameters): the second counts what the first claimed."""
    for n in range(30):
        await setup.schedule(0, n)
    seen = await setup.store.due(NOW, 30)
    statements = setup.trips.statements
    won, _, held = await setup.store.claim_within(seen, [], "lease", NOW, LEASE_MS, 25)
    assert setup.trips.statements - statements == 4  # live claims, two claims, attempts
    assert (len(won), len(held)) == (25, 5)


async def test_a_handed_back_claim_waits_again_as_it_was(setup: Setup) -> None:
    from scheduling.domain.retry_policy import handed_back

    pending = await setup.schedule(0, 1)
    retrying = await setup.schedule(0, 2, status="retrying", attempts=1)
    await (
        setup.db.prepare("UPDATE schedules SET result_code = 'busy' WHERE id = ?")
        .bind(retrying)
        .run()
    )
    won, _ = await setup.store.claim(await setup.store.due(NOW, 20), [], "lease", NOW, LEASE_MS)
    settles = [SettledClaim(c, handed_back(c.row.status, NOW + 5), None) for c in won]
    assert all(s.handed_back for s in settles)
    await setup.store.settle("lease", settles, NOW + 5)
    first, second = await setup.row(pending), await setup.row(retrying)
    assert (first["status"], first["result_code"], first["attempt_count"]) == (
        "pending",
        None,
        0,
    )
    assert (second["status"], second["result_code"], second["attempt_count"]) == (
        "retrying",
        "busy",
        1,
    )
    assert first["next_attempt_at"] == second["next_attempt_at"] == NOW + 5
    assert await setup.attempts(pending) == await setup.attempts(retrying) == []
