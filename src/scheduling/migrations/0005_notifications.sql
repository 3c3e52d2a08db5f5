-- Notifications: webhook endpoints per installation, and the transactional outbox of their
-- deliveries (Standard Webhooks). A delivery row is written in the same D1 batch as the
-- settle that causes it, so no event is lost and none is made for a settle that did not happen.

-- At most 5 per installation (checked by the insert). The signing secret is stored only as
-- AES-256-GCM ciphertext under TOKEN_KEY, bound to the installation and the endpoint.
CREATE TABLE notification_endpoints (
    id                TEXT    PRIMARY KEY,
    installation_id   TEXT    NOT NULL REFERENCES installations (id),
    url               TEXT    NOT NULL CHECK (length(CAST(url AS BLOB)) <= 2048),
    secret_sealed     TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    secret_rotated_at INTEGER NOT NULL,
    disabled_at       INTEGER,           -- the receiver answered 410 Gone
    failing_since     INTEGER,           -- the first failed attempt since the last delivered one
    tested_at         INTEGER,           -- the last "Send test event", and what came back
    test_result       TEXT
) STRICT;

CREATE INDEX notification_endpoints_by_installation ON notification_endpoints (installation_id);

-- The events each endpoint hears of.
CREATE TABLE notification_subscriptions (
    endpoint_id TEXT NOT NULL REFERENCES notification_endpoints (id),
    event_type  TEXT NOT NULL CHECK (event_type IN
                    ('schedule.refused', 'schedule.completed', 'schedule.retrying')),
    PRIMARY KEY (endpoint_id, event_type)
) STRICT;

-- One row per event per subscribed endpoint: the outbox. `id` is the `webhook-id`, the same
-- on every retry; `payload` is the body, the same on every retry.
CREATE TABLE webhook_deliveries (
    id               TEXT    PRIMARY KEY,
    endpoint_id      TEXT    NOT NULL REFERENCES notification_endpoints (id),
    installation_id  TEXT    NOT NULL REFERENCES installations (id),
    schedule_id      TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,  -- the settle's instant
    status           TEXT    NOT NULL,
    attempt_count    INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
    next_attempt_at  INTEGER,           -- set while waiting
    lease_token      TEXT,              -- set while sending
    lease_until      INTEGER,           -- set while sending
    last_attempt_at  INTEGER,
    last_http_status INTEGER,
    last_error       TEXT,              -- why the last attempt did not deliver
    finished_at      INTEGER,           -- delivered or failed
    CHECK (status IN ('waiting', 'sending', 'delivered', 'failed')),
    CHECK ((status = 'waiting') = (next_attempt_at IS NOT NULL)),
    CHECK ((status = 'sending') = (lease_token IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((status IN ('delivered', 'failed')) = (finished_at IS NOT NULL))
) STRICT;

-- What the runner claims (waiting ones whose time came, sending ones whose lease expired)
-- reads only these two small partial indexes, as the schedules' do.
CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until)
    WHERE lease_until IS NOT NULL;
-- The manage page: each endpoint's recent deliveries, newest first.
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at);

-- The lease token of the settle (or the unsent refusal) that last ended a claim of this
-- schedule: the outbox insert in the same batch selects exactly the rows that settle changed.
ALTER TABLE schedules ADD COLUMN settled_by TEXT;

-- A secret is shown once: the next manage page of this session shows this endpoint's.
ALTER TABLE sessions ADD COLUMN reveal_endpoint_id TEXT;
