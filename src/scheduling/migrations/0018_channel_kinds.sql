-- The kinds of endpoint are one entry each in the code (`channels/kinds.py`, issue 36): the
-- table no longer lists them, so a new kind needs no table rebuild. The registry refuses a
-- kind it does not hold before anything is stored. SQLite cannot drop a CHECK, so the table
-- is made again with the rows it holds, everything else as it was (its index too).
-- The subscriptions and the deliveries refer to it by name. Its rows wait in a copy while it
-- is made again under the same name: put back, they satisfy the keys the drop left deferred
-- (a rename of the new table would not: D1 keeps foreign keys on).
PRAGMA defer_foreign_keys = ON;

CREATE TABLE notification_endpoints_copy AS SELECT * FROM notification_endpoints;
DROP TABLE notification_endpoints;

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
    test_result       TEXT,
    kind              TEXT    NOT NULL DEFAULT 'webhook',  -- a name `channels/kinds.py` registers
    next_message_at   INTEGER,           -- a paced kind's: the earliest its next message leaves
    disabled_reason   TEXT    CHECK (disabled_reason IN ('gone', 'failing'))
) STRICT;

INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed, created_at, secret_rotated_at, disabled_at,
    failing_since, tested_at, test_result, kind, next_message_at, disabled_reason)
SELECT id, installation_id, url, secret_sealed, created_at, secret_rotated_at, disabled_at,
    failing_since, tested_at, test_result, kind, next_message_at, disabled_reason
  FROM notification_endpoints_copy;
DROP TABLE notification_endpoints_copy;
CREATE INDEX notification_endpoints_by_installation ON notification_endpoints (installation_id);

-- The notification counters count every kind: they say `delivery`, not `webhook` (the
-- metrics keep their old names too for one release; CHANGELOG.md).
ALTER TABLE tick_history RENAME COLUMN webhook_events TO delivery_events;
ALTER TABLE tick_history RENAME COLUMN webhook_sends TO delivery_sends;
ALTER TABLE tick_history RENAME COLUMN webhooks_delivered TO deliveries_delivered;
ALTER TABLE tick_history RENAME COLUMN webhooks_retrying TO deliveries_retrying;
ALTER TABLE tick_history RENAME COLUMN webhooks_failed TO deliveries_failed;
ALTER TABLE tick_history RENAME COLUMN webhook_lost_lease TO delivery_lost_lease;
ALTER TABLE tick_history RENAME COLUMN webhook_delay_max_ms TO delivery_delay_max_ms;
UPDATE runner_totals SET name = 'delivery_events' WHERE name = 'webhook_events';
UPDATE runner_totals SET name = 'delivery_lost_leases' WHERE name = 'webhook_lost_leases';
UPDATE runner_totals SET name = 'deliveries:' || substr(name, length('webhook_deliveries:') + 1)
 WHERE name LIKE 'webhook\_deliveries:%' ESCAPE '\';
