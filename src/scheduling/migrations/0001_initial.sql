-- Scheduling plugin schema. Applied by `wrangler d1 migrations apply` and by
-- the local runtime (which records it in d1_migrations the way wrangler does).
-- Instants are integer milliseconds since the Unix epoch, UTC.

-- One row per Dee Wan installation of this plugin. The installation token is
-- stored only as AES-256-GCM ciphertext under TOKEN_KEY.
CREATE TABLE installations (
    id              TEXT    PRIMARY KEY,
    site_id         TEXT    NOT NULL,
    base_url        TEXT    NOT NULL,
    token_sealed    TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    token_rotated_at INTEGER NOT NULL
) STRICT;

-- Activation and rotation codes: SHA-256 hash only, single use, 15 minutes.
-- `used_by` is a random marker written by the consuming request, so the write
-- that creates or rotates an installation can check, inside the same batch,
-- that it was this request that consumed the code.
CREATE TABLE activation_codes (
    code_hash       TEXT    PRIMARY KEY,
    kind            TEXT    NOT NULL CHECK (kind IN ('activate', 'rotate')),
    installation_id TEXT,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    used_at         INTEGER,
    used_by         TEXT,
    CHECK ((kind = 'rotate') = (installation_id IS NOT NULL))
) STRICT;

CREATE INDEX activation_codes_by_installation ON activation_codes (installation_id)
    WHERE installation_id IS NOT NULL;

-- Management UI sessions: the cookie value is stored as its SHA-256 hash; the
-- delegation token as AES-256-GCM ciphertext.
CREATE TABLE sessions (
    id_hash             TEXT    PRIMARY KEY,
    installation_id     TEXT    NOT NULL REFERENCES installations (id),
    csrf_token          TEXT    NOT NULL,
    person_id           TEXT    NOT NULL,
    person_name         TEXT    NOT NULL,
    context_kind        TEXT    NOT NULL CHECK (context_kind IN ('content', 'manage')),
    content_id          TEXT,              -- as launched (may be a translation)
    content_primary_id  TEXT,              -- learnt from the first content read
    delegation_sealed   TEXT    NOT NULL,
    delegation_expires_at INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    CHECK ((context_kind = 'content') = (content_id IS NOT NULL))
) STRICT;

CREATE INDEX sessions_by_installation ON sessions (installation_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- One scheduled transition of one pinned version.
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
                           'refused', 'cancelled', 'superseded')),
    result_code       TEXT,
    attempt_count     INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    next_attempt_at   INTEGER,           -- set while pending/retrying
    lease_token       TEXT,              -- set while running
    lease_until       INTEGER,           -- set while running
    requested_by      TEXT    NOT NULL,  -- Dee Wan person id
    requested_by_name TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (installation_id, content_id, kind, revision),
    CHECK ((status IN ('pending', 'retrying')) = (next_attempt_at IS NOT NULL)),
    CHECK ((status = 'running') = (lease_token IS NOT NULL AND lease_until IS NOT NULL))
) STRICT;

-- At most one live schedule per installation + content + kind.
CREATE UNIQUE INDEX schedules_one_live ON schedules (installation_id, content_id, kind)
    WHERE status IN ('pending', 'retrying', 'running');

-- The runner's due-row query reads only these two small partial indexes, so
-- its cost follows the number of live rows, not the size of the table.
CREATE INDEX schedules_waiting ON schedules (next_attempt_at)
    WHERE status IN ('pending', 'retrying');
CREATE INDEX schedules_leased ON schedules (lease_until)
    WHERE status = 'running';

-- Page lists: one installation's schedules, newest first.
CREATE INDEX schedules_by_installation ON schedules (installation_id, created_at);

-- One row per send. A row with started_at and no finished_at is an attempt
-- whose runner died: its outcome is unknown.
CREATE TABLE schedule_attempts (
    schedule_id  TEXT    NOT NULL REFERENCES schedules (id),
    attempt      INTEGER NOT NULL CHECK (attempt >= 1),
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    code         TEXT,
    http_status  INTEGER,
    PRIMARY KEY (schedule_id, attempt)
) STRICT;
