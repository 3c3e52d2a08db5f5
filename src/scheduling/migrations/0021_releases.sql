-- Releases (issue 47): an installation's named list of pinned changes, one time, sent one at a
-- time in order. Each item is a schedule (its own id, revision, key, retries and lateness cap);
-- the release keeps the name, the time and how its line ended. A release is not atomic: what
-- was applied stays applied when a later item is not done, and the rest is held (never sent)
-- until a person resumes or cancels it.
--   status     waiting | held | completed | cancelled; `conflict` and `running` are shown, not
--              stored (domain/releases.py's `shown_status`)
--   held_by    the item that ended without applying (held_code: its result code, held_at: when)
--   ended_at   when it completed or was cancelled
CREATE TABLE releases (
    id               TEXT    PRIMARY KEY,
    installation_id  TEXT    NOT NULL REFERENCES installations (id),
    name             TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    due_at           INTEGER NOT NULL,
    timezone         TEXT    NOT NULL,
    local_time       TEXT    NOT NULL,
    fold             TEXT    CHECK (fold IN ('earlier', 'later')),
    status           TEXT    NOT NULL CHECK (status IN ('waiting', 'held', 'completed', 'cancelled')),
    held_by          TEXT,
    held_code        TEXT,
    held_at          INTEGER,
    ended_at         INTEGER,
    checked_at       INTEGER,           -- the last check of its items' pins, and by whom
    checked_by_name  TEXT,
    created_by       TEXT    NOT NULL,
    created_by_name  TEXT    NOT NULL,
    cancelled_by_name TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CHECK ((status = 'held') = (held_by IS NOT NULL AND held_at IS NOT NULL)),
    CHECK ((status IN ('completed', 'cancelled')) = (ended_at IS NOT NULL))
) STRICT;

CREATE INDEX releases_by_installation ON releases (installation_id, status, due_at);
-- The retention purge reads finished releases by when they ended.
CREATE INDEX releases_finished ON releases (ended_at) WHERE ended_at IS NOT NULL;

-- Two new statuses (`queued`, `held`) and the columns of a release's items, so the schedules
-- are made again (SQLite cannot change a CHECK): copied aside, the table dropped and created
-- under its own name, the rows put back (they satisfy the attempts' foreign keys, deferred
-- meanwhile: D1 keeps foreign keys on), then every index and trigger created again.
--   queued           an item behind an earlier one of its release: live (it holds its content
--                    and kind's one live slot) but not due, so `next_attempt_at` is NULL and
--                    the runner's indexes never see it
--   held             ended unsent: known stale (`held_stale`: a collision ran; `held_conflict`:
--                    a check found its pin moved) or an earlier item of its release was not
--                    done (`release_held`)
--   release_id, release_position   its release and its place in the send order
--   conflict, conflict_at          what the last check found moved (version_moved,
--                                  revision_moved, change_gone), NULL when the pin is current
--   replaces, replaced_as          the row this one was made from, and how (moved, sent_now,
--                                  resumed, repinned, retried): its history's "moved by … from …"
PRAGMA defer_foreign_keys = ON;

CREATE TABLE schedules_copy AS SELECT * FROM schedules;
DROP TABLE schedules;

CREATE TABLE schedules (
    id                TEXT    PRIMARY KEY,
    installation_id   TEXT    NOT NULL REFERENCES installations (id),
    content_id        TEXT    NOT NULL,  -- primary instance of the translation group
    kind              TEXT    NOT NULL CHECK (kind IN ('publish', 'unpublish')),
    to_state          TEXT    NOT NULL,
    version_id        TEXT    NOT NULL,  -- the pin
    workflow_revision INTEGER NOT NULL,
    revision          INTEGER NOT NULL CHECK (revision >= 1),
    idempotency_key   TEXT    NOT NULL UNIQUE,
    due_at            INTEGER NOT NULL,  -- UTC; never rewritten by a zone rule change
    timezone          TEXT    NOT NULL,
    local_time        TEXT    NOT NULL,  -- wall time as entered, YYYY-MM-DDTHH:MM
    fold              TEXT    CHECK (fold IN ('earlier', 'later')),
    status            TEXT    NOT NULL CHECK (status IN
                          ('pending', 'retrying', 'running', 'completed',
                           'refused', 'cancelled', 'superseded', 'queued', 'held')),
    result_code       TEXT,
    attempt_count     INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    next_attempt_at   INTEGER,           -- set while pending/retrying
    lease_token       TEXT,              -- set while running
    lease_until       INTEGER,           -- set while running
    requested_by      TEXT    NOT NULL,  -- Dee Wan person id
    requested_by_name TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    cancelled_by      TEXT,
    cancelled_by_name TEXT,
    cancelled_at      INTEGER,
    settled_by        TEXT,
    ended_by          TEXT,
    dismissed_by      TEXT,
    dismissed_by_name TEXT,
    dismissed_at      INTEGER,
    title_sealed      TEXT,
    made_stale_by     TEXT,
    made_stale_at     INTEGER,
    release_id        TEXT,
    release_position  INTEGER,
    conflict          TEXT,
    conflict_at       INTEGER,
    replaces          TEXT,
    replaced_as       TEXT    CHECK (replaced_as IN
                          ('moved', 'sent_now', 'resumed', 'repinned', 'retried')),
    UNIQUE (installation_id, content_id, kind, revision),
    CHECK ((status IN ('pending', 'retrying')) = (next_attempt_at IS NOT NULL)),
    CHECK ((status = 'running') = (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((cancelled_at IS NULL) = (cancelled_by IS NULL)
           AND (cancelled_at IS NULL) = (cancelled_by_name IS NULL)
           AND (cancelled_at IS NULL OR status = 'cancelled')),
    CHECK (ended_by IS NULL OR (ended_by IN ('attempts', 'lateness', 'retry_after')
                                AND result_code = 'retry_exhausted')),
    CHECK ((dismissed_at IS NULL) = (dismissed_by IS NULL)
           AND (dismissed_at IS NULL) = (dismissed_by_name IS NULL)
           AND (dismissed_at IS NULL OR status IN ('refused', 'held'))),
    -- A release's item has its place; only an item waits behind another (an insert into a
    -- release that is no longer waiting, or is full, writes no place and is refused here:
    -- repository/schedules.py).
    CHECK ((release_id IS NULL) = (release_position IS NULL)),
    CHECK (status <> 'queued' OR release_id IS NOT NULL),
    CHECK ((replaces IS NULL) = (replaced_as IS NULL))
) STRICT;

INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
    workflow_revision, revision, idempotency_key, due_at, timezone, local_time, fold, status,
    result_code, attempt_count, next_attempt_at, lease_token, lease_until, requested_by,
    requested_by_name, created_at, updated_at, cancelled_by, cancelled_by_name, cancelled_at,
    settled_by, ended_by, dismissed_by, dismissed_by_name, dismissed_at, title_sealed,
    made_stale_by, made_stale_at)
SELECT id, installation_id, content_id, kind, to_state, version_id,
    workflow_revision, revision, idempotency_key, due_at, timezone, local_time, fold, status,
    result_code, attempt_count, next_attempt_at, lease_token, lease_until, requested_by,
    requested_by_name, created_at, updated_at, cancelled_by, cancelled_by_name, cancelled_at,
    settled_by, ended_by, dismissed_by, dismissed_by_name, dismissed_at, title_sealed,
    made_stale_by, made_stale_at
  FROM schedules_copy;
DROP TABLE schedules_copy;

-- Every index of the table as migrations 0001–0013 made it; a queued item holds its content
-- and kind's one live slot, a held one is finished.
CREATE UNIQUE INDEX schedules_one_live ON schedules (installation_id, content_id, kind)
    WHERE status IN ('pending', 'retrying', 'queued', 'running');
CREATE INDEX schedules_waiting ON schedules (next_attempt_at)
    WHERE status IN ('pending', 'retrying');
CREATE INDEX schedules_leased ON schedules (lease_until)
    WHERE status = 'running';
CREATE INDEX schedules_by_installation ON schedules (installation_id, created_at);
CREATE INDEX schedules_finished ON schedules (status, updated_at)
    WHERE status IN ('completed', 'refused', 'cancelled', 'superseded', 'held');
CREATE INDEX schedules_running_by_installation ON schedules (installation_id, lease_until)
    WHERE status = 'running';
CREATE INDEX schedules_unauthorized ON schedules (installation_id, updated_at)
    WHERE result_code = 'plugin_unauthorized';
CREATE INDEX schedules_waiting_by_installation ON schedules (installation_id, next_attempt_at)
    WHERE status IN ('pending', 'retrying');
-- A release's items in send order.
CREATE INDEX schedules_by_release ON schedules (release_id, release_position)
    WHERE release_id IS NOT NULL;

-- Migration 0017's trigger, made again with the table; a queued item is marked too.
CREATE TRIGGER schedules_made_stale AFTER UPDATE OF status ON schedules
WHEN NEW.status = 'completed' AND OLD.status <> 'completed'
BEGIN
    UPDATE schedules SET made_stale_by = NEW.id, made_stale_at = NEW.updated_at
     WHERE installation_id = NEW.installation_id AND content_id = NEW.content_id
       AND kind <> NEW.kind AND status IN ('pending', 'retrying', 'queued')
       AND made_stale_by IS NULL;
END;

-- A claim opens its attempt's row by itself (the attempt it counts, started at its instant):
-- a statement less for every claim, which a release's items, claimed one at a time, feel
-- most. Only a claim counts an attempt up while running; a hand-back gives one back.
CREATE TRIGGER schedules_attempt_opened AFTER UPDATE OF attempt_count ON schedules
WHEN NEW.status = 'running' AND NEW.attempt_count > OLD.attempt_count
BEGIN
    INSERT INTO schedule_attempts (schedule_id, attempt, started_at)
    VALUES (NEW.id, NEW.attempt_count, NEW.updated_at);
END;

-- A release's line, kept by triggers: whatever ends its head (a settle, an unsent refusal or
-- hold, a cancel, a supersede, on any runner or page) moves the line in the same transaction,
-- at no statement of its own. Only the head of a line is ever pending, retrying or running,
-- so an item is claimed only once every item before it was applied.
--   applied, cancelled, or replaced: the next queued item is due (at the release's time, or
--   now if that has passed: its own `due_at`, kept for the lateness cap, or now);
--   not done (refused, held): every queued item is held, and the release with it;
--   the last item applied: the release is completed.
-- The updates change only queued rows and releases, so this trigger never fires itself.
CREATE TRIGGER releases_line_moves AFTER UPDATE OF status ON schedules
WHEN NEW.release_id IS NOT NULL AND OLD.status IN ('pending', 'retrying', 'running')
 AND NEW.status NOT IN ('pending', 'retrying', 'running', 'queued')
BEGIN
    UPDATE schedules SET status = 'held', result_code = 'release_held', updated_at = NEW.updated_at
     WHERE release_id = NEW.release_id AND status = 'queued'
       AND NEW.status IN ('refused', 'held');
    UPDATE releases
       SET status = 'held', held_by = NEW.id, held_code = NEW.result_code,
           held_at = NEW.updated_at, updated_at = NEW.updated_at
     WHERE id = NEW.release_id AND status = 'waiting' AND NEW.status IN ('refused', 'held');
    UPDATE schedules SET status = 'pending', next_attempt_at = max(due_at, NEW.updated_at),
           updated_at = NEW.updated_at
     WHERE id = (SELECT id FROM schedules WHERE release_id = NEW.release_id AND status = 'queued'
                  ORDER BY release_position LIMIT 1)
       AND NEW.status IN ('completed', 'cancelled', 'superseded')
       AND EXISTS (SELECT 1 FROM releases WHERE id = NEW.release_id AND status = 'waiting')
       AND NOT EXISTS (SELECT 1 FROM schedules WHERE release_id = NEW.release_id
                          AND status IN ('pending', 'retrying', 'running'));
    UPDATE releases SET status = 'completed', ended_at = NEW.updated_at, updated_at = NEW.updated_at
     WHERE id = NEW.release_id AND status = 'waiting' AND NEW.status IN ('completed', 'cancelled')
       AND EXISTS (SELECT 1 FROM schedules WHERE release_id = NEW.release_id
                      AND status = 'completed')
       AND NOT EXISTS (SELECT 1 FROM schedules WHERE release_id = NEW.release_id
                          AND status IN ('pending', 'retrying', 'running', 'queued'));
END;

-- An item joins its release queued; the line's first waiting item is its head (pending), any
-- other pending one waits behind it again (a re-pinned first item comes back at its place).
CREATE TRIGGER releases_line_joined AFTER INSERT ON schedules
WHEN NEW.release_id IS NOT NULL
BEGIN
    UPDATE schedules SET status = 'queued', next_attempt_at = NULL
     WHERE release_id = NEW.release_id AND status = 'pending'
       AND release_position > (SELECT min(release_position) FROM schedules
                                WHERE release_id = NEW.release_id
                                  AND status IN ('pending', 'retrying', 'running', 'queued'));
    UPDATE schedules SET status = 'pending', next_attempt_at = max(due_at, NEW.created_at)
     WHERE id = (SELECT id FROM schedules WHERE release_id = NEW.release_id AND status = 'queued'
                  ORDER BY release_position LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM schedules WHERE release_id = NEW.release_id
                          AND status IN ('pending', 'retrying', 'running'));
END;

-- A reorder (only while the release waits for its time, nothing being sent) moves the head
-- to the item now first, the same way.
CREATE TRIGGER releases_line_reordered AFTER UPDATE OF release_position ON schedules
WHEN NEW.release_id IS NOT NULL AND OLD.release_id = NEW.release_id
BEGIN
    UPDATE schedules SET status = 'queued', next_attempt_at = NULL
     WHERE release_id = NEW.release_id AND status = 'pending'
       AND release_position > (SELECT min(release_position) FROM schedules
                                WHERE release_id = NEW.release_id
                                  AND status IN ('pending', 'retrying', 'running', 'queued'));
    UPDATE schedules SET status = 'pending', next_attempt_at = max(due_at, NEW.updated_at)
     WHERE id = (SELECT id FROM schedules WHERE release_id = NEW.release_id AND status = 'queued'
                  ORDER BY release_position LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM schedules WHERE release_id = NEW.release_id
                          AND status IN ('pending', 'retrying', 'running'));
END;

-- The retention purge deletes an ended release's items once it ended past the window (never
-- an item of a release still waiting or held); the release goes with its last item, at no
-- statement of the purge's own.
CREATE TRIGGER releases_purged AFTER DELETE ON schedules
WHEN OLD.release_id IS NOT NULL
BEGIN
    DELETE FROM releases WHERE id = OLD.release_id AND ended_at IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM schedules WHERE release_id = OLD.release_id);
END;

-- Releases by how they ended, for the operator's metrics (`releases:held`, …): counted by
-- the change itself, whichever path made it (a settle, a claim's hold, a person's cancel).
CREATE TRIGGER releases_counted AFTER UPDATE OF status ON releases
WHEN NEW.status IN ('held', 'completed', 'cancelled') AND NEW.status <> OLD.status
BEGIN
    INSERT OR IGNORE INTO runner_totals (name, value) VALUES ('releases:' || NEW.status, 0);
    UPDATE runner_totals SET value = value + 1 WHERE name = 'releases:' || NEW.status;
END;

-- An endpoint may hear of a release held or completed. SQLite cannot change a CHECK, so the
-- subscriptions are made again with the rows they hold.
CREATE TABLE notification_subscriptions_new (
    endpoint_id TEXT NOT NULL REFERENCES notification_endpoints (id),
    event_type  TEXT NOT NULL CHECK (event_type IN
                    ('schedule.refused', 'schedule.completed', 'schedule.retrying',
                     'proposal.created', 'release.held', 'release.completed')),
    PRIMARY KEY (endpoint_id, event_type)
) STRICT;
INSERT INTO notification_subscriptions_new (endpoint_id, event_type)
    SELECT endpoint_id, event_type FROM notification_subscriptions;
DROP TABLE notification_subscriptions;
ALTER TABLE notification_subscriptions_new RENAME TO notification_subscriptions;

-- What an agent may propose besides a schedule of its own: adding the change to a waiting
-- release (`release_id`: its time is the release's), or a waiting schedule moved to a new
-- time or sent now (`changes`, `changes_as`); a person confirms it on their page as any.
ALTER TABLE proposals ADD COLUMN release_id TEXT;
ALTER TABLE proposals ADD COLUMN changes TEXT;
ALTER TABLE proposals ADD COLUMN changes_as TEXT CHECK (changes_as IN ('moved', 'sent_now'));
