"""Management-page sessions. The cookie value is never stored, only its SHA-256 hash.

Each launch is a session with a public handle (`tab`): its pages are addressed with it and
its cookie is named for it, so launches of one person in several tabs live side by side
(the latest launch also holds the handle-less cookie, for addresses without a handle).

A content session also keeps what its content's last read said: the content's
primary id, and the changes Dee Wan offered the person (`offered`). The
Cancel button and a posted cancel both judge by these (`domain/rights.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from scheduling.domain.rights import Change, Rights
from scheduling.ports import Database, Row
from scheduling.repository import agent_keys
from scheduling.repository.installations import GONE_SQL


@dataclass(frozen=True)
class Session:
    """A person's session, opened from a Dee Wan launch."""

    id_hash: str
    installation_id: str
    csrf_token: str
    person_id: str
    person_name: str
    context_kind: str  # content | manage
    content_id: str | None
    content_primary_id: str | None
    delegation_sealed: str
    expires_at: int
    offered: frozenset[Change] | None  # None until a content page was shown
    # An endpoint whose new signing secret this session's next manage page shows, once.
    reveal_endpoint_id: str | None = None
    # Dee Wan answered `plugin_unauthorized` for the installation since its token was last
    # set: it was uninstalled, and the session may do nothing more.
    installation_gone: bool = False
    notice: str | None = None  # what its next manage page says, once
    tab: str | None = None  # the launch's public handle (None: opened before handles)
    news_since: int | None = None  # its first page says what happened since then (once)

    def href(self, sub: str = "", query: Iterable[tuple[str, str]] = ()) -> str:
        """The address of one of its installation's pages (`sub`: `/calendar`…), within this
        launch: its handle first, then `query`."""
        pairs = [("tab", self.tab)] if self.tab else []
        pairs += list(query)
        return f"/installations/{self.installation_id}{sub}" + (
            f"?{urlencode(pairs)}" if pairs else ""
        )

    @property
    def opened_for(self) -> str:
        """What its page was opened for; forms carry it so a replaced session is told apart."""
        return self.content_id or "manage"

    def having_read(self, primary_id: str, offered: Iterable[Change]) -> Session:
        """The session as a read of its content leaves it (`remember_read` keeps the same)."""
        primary = self.content_primary_id or primary_id
        return replace(self, content_primary_id=primary, offered=frozenset(offered))

    @property
    def rights(self) -> Rights:
        """What this person may change, as Dee Wan listed it when their page was shown."""
        if self.context_kind == "manage":
            return Rights.everything()
        return Rights.of_content(self.content_primary_id, self.offered or ())


_FIELDS = (
    "id_hash",
    "installation_id",
    "csrf_token",
    "person_id",
    "person_name",
    "context_kind",
    "content_id",
    "content_primary_id",
    "delegation_sealed",
    "expires_at",
)
_COLUMNS = ", ".join(
    (*_FIELDS, "offered_transitions", "reveal_endpoint_id", "notice", "tab", "news_since")
)


def _session(row: Row) -> Session:
    offered = row["offered_transitions"]
    return Session(
        **{name: row[name] for name in _FIELDS},
        offered=None if offered is None else _changes(offered),
        reveal_endpoint_id=row["reveal_endpoint_id"],
        installation_gone=bool(row.get("installation_gone")),
        notice=row["notice"],
        tab=row["tab"],
        news_since=row["news_since"],
    )


def _changes(text: str) -> frozenset[Change]:
    return frozenset((str(kind), str(to)) for kind, to in json.loads(text))


def _text(offered: Iterable[Change]) -> str:
    return json.dumps(sorted(offered), separators=(",", ":"))


async def create(
    db: Database,
    *,
    id_hash: str,
    installation_id: str,
    csrf_token: str,
    person_id: str,
    person_name: str,
    context_kind: str,
    content_id: str | None,
    delegation_sealed: str,
    delegation_expires_at: int,
    now: int,
    expires_at: int,
    tab: str,
    forget_before: int = 0,
) -> None:
    """Insert the session; expired sessions go in the same batch, so delegations do not linger.
    Its launch exchange just succeeded with the installation's token: Dee Wan accepts it, and
    on a manage launch it confirmed the person may manage still (their manage keys renewed).
    The person's previous launch is what its first page reports news since; this launch is
    their latest (a calendar feed of theirs lives on from it). People of any installation
    who last launched before `forget_before` (the retention window) are forgotten in the same
    batch, a bounded number at a time (`people_by_launch`), at no cost to the runner's ticks."""
    manage = context_kind == "manage"
    renewed = [agent_keys.renew(db, installation_id, person_id, now)] if manage else []
    await db.batch(
        [
            *renewed,
            db.prepare("DELETE FROM sessions WHERE expires_at <= ?").bind(now),
            db.prepare(FORGET_PEOPLE_SQL).bind(forget_before),
            db.prepare("UPDATE installations SET token_accepted_at = ?2 WHERE id = ?1").bind(
                installation_id, now
            ),
            db.prepare(
                "INSERT INTO sessions (id_hash, installation_id, csrf_token, person_id, person_name,"
                " context_kind, content_id, delegation_sealed, delegation_expires_at, created_at,"
                " expires_at, tab, news_since) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                " ?12, (SELECT launched_at FROM people WHERE installation_id = ?2"
                " AND person_id = ?4))"
            ).bind(
                id_hash,
                installation_id,
                csrf_token,
                person_id,
                person_name,
                context_kind,
                content_id,
                delegation_sealed,
                delegation_expires_at,
                now,
                expires_at,
                tab,
            ),
            db.prepare(
                "INSERT INTO people (installation_id, person_id, launched_at) VALUES (?1, ?2, ?3)"
                " ON CONFLICT (installation_id, person_id) DO UPDATE SET launched_at = ?3"
            ).bind(installation_id, person_id, now),
        ]
    )


FORGET_PEOPLE_SQL = """DELETE FROM people WHERE rowid IN (
    SELECT rowid FROM people WHERE launched_at < ? LIMIT 100)"""


FIND_LIVE_SQL = (
    "SELECT "
    + ", ".join(f"s.{column}" for column in _COLUMNS.split(", "))
    + f", {GONE_SQL} AS installation_gone"
    " FROM sessions s JOIN installations i ON i.id = s.installation_id"
    " WHERE s.id_hash = ? AND s.expires_at > ?"
)


async def find_live(db: Database, id_hash: str, now: int) -> Session | None:
    """The live session of this hash, and whether its installation is gone (one statement)."""
    row = await db.prepare(FIND_LIVE_SQL).bind(id_hash, now).first()
    return _session(row) if row else None


async def installation_of(db: Database, id_hash: str) -> str | None:
    """The installation a session was opened for, whether or not it has ended (until it is
    deleted): an error page links back to that installation's Dee Wan."""
    row = (
        await db.prepare("SELECT installation_id FROM sessions WHERE id_hash = ?")
        .bind(id_hash)
        .first()
    )
    return str(row["installation_id"]) if row else None


async def remember_read(
    db: Database, session: Session, primary_id: str, offered: Iterable[Change], now: int
) -> None:
    """Keep what a content read said: its primary id (learnt once) and the changes offered,
    with the person's agent keys of that content (their rights just confirmed). Writes on a
    session's first read, and when what was offered changed."""
    changes = frozenset(offered)
    if session.content_primary_id is not None and session.offered == changes:
        return
    primary = session.content_primary_id or primary_id
    await db.batch(
        [
            db.prepare(
                "UPDATE sessions SET content_primary_id = ?, offered_transitions = ?"
                " WHERE id_hash = ?"
            ).bind(primary, _text(changes), session.id_hash),
            agent_keys.renew(db, session.installation_id, session.person_id, now, primary, changes),
        ]
    )


async def reveal_next(db: Database, id_hash: str, endpoint_id: str) -> None:
    """The session's next manage page shows this endpoint's signing secret (once)."""
    await (
        db.prepare("UPDATE sessions SET reveal_endpoint_id = ? WHERE id_hash = ?")
        .bind(endpoint_id, id_hash)
        .run()
    )


async def take_reveal(db: Database, session: Session) -> str | None:
    """The endpoint whose secret to show now, taken so no later page shows it again (of two
    pages loaded at once, one)."""
    if session.reveal_endpoint_id is None:
        return None
    taken = (
        await db.prepare(
            "UPDATE sessions SET reveal_endpoint_id = NULL"
            " WHERE id_hash = ? AND reveal_endpoint_id = ?"
        )
        .bind(session.id_hash, session.reveal_endpoint_id)
        .run()
    )
    return session.reveal_endpoint_id if taken.meta.changes == 1 else None


async def say_next(db: Database, id_hash: str, notice: str) -> None:
    """The session's next manage page says `notice` (once): what an action did to something
    that is gone since (a deleted endpoint)."""
    await db.prepare("UPDATE sessions SET notice = ? WHERE id_hash = ?").bind(notice, id_hash).run()


async def take_notice(db: Database, session: Session) -> str | None:
    """The notice to show now, taken so no later page shows it again."""
    if session.notice is None:
        return None
    taken = (
        await db.prepare("UPDATE sessions SET notice = NULL WHERE id_hash = ? AND notice = ?")
        .bind(session.id_hash, session.notice)
        .run()
    )
    return session.notice if taken.meta.changes == 1 else None


async def take_news_since(db: Database, session: Session) -> int | None:
    """Since when its first page reports what happened (its person's previous launch), taken
    so no later page reports it again."""
    if session.news_since is None:
        return None
    taken = (
        await db.prepare(
            "UPDATE sessions SET news_since = NULL WHERE id_hash = ? AND news_since = ?"
        )
        .bind(session.id_hash, session.news_since)
        .run()
    )
    return session.news_since if taken.meta.changes == 1 else None
