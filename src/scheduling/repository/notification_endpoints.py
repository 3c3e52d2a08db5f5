"""An installation's notification endpoints: add (at most 5), rotate, delete, the last test,
and what the manage page lists (each endpoint with its recent deliveries)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduling.domain.notifications import EVENT_TYPES, MAX_ENDPOINTS, DeliveryStatus
from scheduling.domain.records import DeliveryTarget
from scheduling.ports import Database, Row

# What the manage page shows of each endpoint's history.
RECENT_DELIVERIES = 10


@dataclass(frozen=True)
class AboutSchedule:
    """The schedule a delivery tells of, as its row names it: content, change, due time."""

    id: str
    content_id: str
    kind: str
    version_id: str
    due_at: int
    timezone: str


@dataclass(frozen=True)
class Delivery:
    """One delivery to an endpoint, as stored."""

    id: str
    event_type: str
    created_at: int
    status: DeliveryStatus
    attempt_count: int
    next_attempt_at: int | None
    last_attempt_at: int | None
    last_http_status: int | None
    last_error: str | None
    finished_at: int | None
    schedule: AboutSchedule | None = None  # None: a test event, or the schedule is gone

    @classmethod
    def from_row(cls, row: Row) -> Delivery:
        about = None
        if row["s_id"] is not None:
            about = AboutSchedule(
                id=row["s_id"],
                content_id=row["s_content_id"],
                kind=row["s_kind"],
                version_id=row["s_version_id"],
                due_at=row["s_due_at"],
                timezone=row["s_timezone"],
            )
        return cls(
            id=row["id"],
            event_type=row["event_type"],
            created_at=row["created_at"],
            status=DeliveryStatus(row["status"]),
            attempt_count=row["attempt_count"],
            next_attempt_at=row["next_attempt_at"],
            last_attempt_at=row["last_attempt_at"],
            last_http_status=row["last_http_status"],
            last_error=row["last_error"],
            finished_at=row["finished_at"],
            schedule=about,
        )


@dataclass(frozen=True)
class Endpoint:
    """One notification endpoint of an installation, as stored."""

    id: str
    installation_id: str
    url: str  # when the URL is the secret: its host and last 4 characters
    secret_sealed: str
    events: tuple[str, ...]
    created_at: int
    secret_rotated_at: int
    disabled_at: int | None
    failing_since: int | None
    tested_at: int | None
    test_result: str | None
    deliveries: tuple[Delivery, ...] = ()  # the latest RECENT_DELIVERIES
    delivery_count: int = 0  # all it holds, which a delete removes with it
    kind: str = ""  # its channel kind's name, as stored (`channels/kinds.py`)
    disabled_reason: str | None = None

    def target(self) -> DeliveryTarget:
        return DeliveryTarget(
            self.id,
            self.installation_id,
            self.url,
            self.secret_sealed,
            disabled=self.disabled_at is not None,
            kind=self.kind,
        )


_ENDPOINT_COLUMNS = (
    "e.id, e.installation_id, e.kind, e.url, e.secret_sealed, e.created_at, e.secret_rotated_at,"
    " e.disabled_at, e.disabled_reason, e.failing_since, e.tested_at, e.test_result,"
    " (SELECT group_concat(event_type, ' ') FROM notification_subscriptions"
    "  WHERE endpoint_id = e.id) AS events,"
    " (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = e.id) AS delivery_count"
)
# Each delivery with the schedule it tells of (a LEFT JOIN: a test event tells of none).
_DELIVERY_COLUMNS = (
    "d.endpoint_id, d.id, d.event_type, d.created_at, d.status, d.attempt_count,"
    " d.next_attempt_at, d.last_attempt_at, d.last_http_status, d.last_error, d.finished_at,"
    " s.id AS s_id, s.content_id AS s_content_id, s.kind AS s_kind,"
    " s.version_id AS s_version_id, s.due_at AS s_due_at, s.timezone AS s_timezone"
)


def _endpoint(row: Row, deliveries: Sequence[Delivery] = ()) -> Endpoint:
    listed = set((row["events"] or "").split())
    return Endpoint(
        id=row["id"],
        installation_id=row["installation_id"],
        url=row["url"],
        secret_sealed=row["secret_sealed"],
        events=tuple(event for event in EVENT_TYPES if event in listed),
        created_at=row["created_at"],
        secret_rotated_at=row["secret_rotated_at"],
        disabled_at=row["disabled_at"],
        failing_since=row["failing_since"],
        tested_at=row["tested_at"],
        test_result=row["test_result"],
        deliveries=tuple(deliveries),
        delivery_count=int(row["delivery_count"] or 0),
        kind=row["kind"],
        disabled_reason=row["disabled_reason"],
    )


async def count(db: Database, installation_id: str) -> int:
    row = (
        await db.prepare(
            "SELECT count(*) AS n FROM notification_endpoints WHERE installation_id = ?"
        )
        .bind(installation_id)
        .first()
    )
    return int(row["n"]) if row else 0


async def create(
    db: Database,
    *,
    endpoint_id: str,
    installation_id: str,
    kind: str,
    url: str,
    events: Sequence[str],
    secret_sealed: str,
    now: int,
) -> bool:
    """Insert the endpoint and its subscriptions in one batch; False when the installation
    already has MAX_ENDPOINTS (counted inside the insert, so two at once cannot pass it)."""
    values = ", ".join(f"(?1, ?{i + 2})" for i in range(len(events)))
    inserted, _ = await db.batch(
        [
            db.prepare(
                "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
                " created_at, secret_rotated_at, kind)"
                " SELECT ?1, ?2, ?3, ?4, ?5, ?5, ?7"
                " WHERE (SELECT count(*) FROM notification_endpoints WHERE installation_id = ?2) < ?6"
            ).bind(endpoint_id, installation_id, url, secret_sealed, now, MAX_ENDPOINTS, kind),
            db.prepare(
                "INSERT INTO notification_subscriptions (endpoint_id, event_type)"
                f" SELECT column1, column2 FROM (VALUES {values})"
                " WHERE EXISTS (SELECT 1 FROM notification_endpoints WHERE id = ?1)"
            ).bind(endpoint_id, *events),
        ]
    )
    return inserted.meta.changes == 1


async def get(db: Database, installation_id: str, endpoint_id: str) -> Endpoint | None:
    """One endpoint, with its recent deliveries (what a confirmation names)."""
    found = await _with_deliveries(
        db, "e.installation_id = ?1 AND e.id = ?2", installation_id, endpoint_id
    )
    return found[0] if found else None


async def list_for(db: Database, installation_id: str) -> list[Endpoint]:
    """The installation's endpoints, oldest first, each with its RECENT_DELIVERIES newest
    deliveries: one round trip."""
    return await _with_deliveries(db, "e.installation_id = ?1", installation_id)


async def _with_deliveries(db: Database, where: str, *params: str) -> list[Endpoint]:
    """The endpoints `where` chooses (SQL text over `e`, built from constants; every value
    bound), oldest first, each with its newest deliveries and their schedules."""
    endpoints, deliveries = await db.batch(
        [
            db.prepare(
                f"SELECT {_ENDPOINT_COLUMNS} FROM notification_endpoints e"
                f" WHERE {where} ORDER BY e.created_at, e.id"
            ).bind(*params),
            db.prepare(
                f"SELECT {_DELIVERY_COLUMNS} FROM notification_endpoints e"
                " JOIN webhook_deliveries d ON d.id IN ("
                "   SELECT id FROM webhook_deliveries WHERE endpoint_id = e.id"
                f"  ORDER BY created_at DESC, id DESC LIMIT {RECENT_DELIVERIES})"
                " LEFT JOIN schedules s ON s.id = d.schedule_id AND s.installation_id = d.installation_id"
                f" WHERE {where} ORDER BY d.created_at DESC, d.id DESC"
            ).bind(*params),
        ]
    )
    by_endpoint: dict[str, list[Delivery]] = {}
    for row in deliveries.results:
        by_endpoint.setdefault(row["endpoint_id"], []).append(Delivery.from_row(row))
    return [_endpoint(row, by_endpoint.get(row["id"], ())) for row in endpoints.results]


async def rotate(
    db: Database, installation_id: str, endpoint_id: str, secret_sealed: str, now: int
) -> bool:
    result = (
        await db.prepare(
            "UPDATE notification_endpoints SET secret_sealed = ?, secret_rotated_at = ?"
            " WHERE id = ? AND installation_id = ?"
        )
        .bind(secret_sealed, now, endpoint_id, installation_id)
        .run()
    )
    return result.meta.changes == 1


async def delete(db: Database, installation_id: str, endpoint_id: str) -> bool:
    """The endpoint, its subscriptions and its deliveries, in one batch."""
    owned = "SELECT id FROM notification_endpoints WHERE id = ?1 AND installation_id = ?2"
    results = await db.batch(
        [
            db.prepare(f"DELETE FROM webhook_deliveries WHERE endpoint_id IN ({owned})").bind(
                endpoint_id, installation_id
            ),
            db.prepare(
                f"DELETE FROM notification_subscriptions WHERE endpoint_id IN ({owned})"
            ).bind(endpoint_id, installation_id),
            db.prepare(
                "DELETE FROM notification_endpoints WHERE id = ?1 AND installation_id = ?2"
            ).bind(endpoint_id, installation_id),
        ]
    )
    return results[-1].meta.changes == 1


async def record_test(
    db: Database, installation_id: str, endpoint_id: str, now: int, result: str
) -> None:
    await (
        db.prepare(
            "UPDATE notification_endpoints SET tested_at = ?, test_result = ?"
            " WHERE id = ? AND installation_id = ?"
        )
        .bind(now, result, endpoint_id, installation_id)
        .run()
    )
