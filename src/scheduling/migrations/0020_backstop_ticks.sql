-- A tick a request runs when the cron has stopped (the backstop: `runner/tick.py`) is
-- recorded as its own kind, 'backstop'. SQLite cannot change a CHECK, so the table is made
-- again with the rows it holds (same columns, same order), as 0013 and 0014 did.
CREATE TABLE tick_history_new (
    at                    INTEGER NOT NULL,
    kind                  TEXT    NOT NULL CHECK (kind IN ('tick', 'alarm', 'backstop')),
    error                 TEXT,
    duration_ms           INTEGER NOT NULL CHECK (duration_ms >= 0),
    backlog               INTEGER NOT NULL,
    cron_delay_ms         INTEGER NOT NULL,
    due                   INTEGER NOT NULL,
    claimed               INTEGER NOT NULL,
    batches               INTEGER NOT NULL,
    sends                 INTEGER NOT NULL,
    completed             INTEGER NOT NULL,
    refused               INTEGER NOT NULL,
    retrying              INTEGER NOT NULL,
    refused_unsent        INTEGER NOT NULL,
    refused_unsent_late   INTEGER NOT NULL,
    lost_claim            INTEGER NOT NULL,
    lost_lease            INTEGER NOT NULL,
    lateness_p50_ms       INTEGER NOT NULL,
    lateness_p99_ms       INTEGER NOT NULL,
    lateness_max_ms       INTEGER NOT NULL,
    d1_statements         INTEGER NOT NULL,
    d1_round_trips        INTEGER NOT NULL,
    limit_reached         INTEGER NOT NULL,
    lateness_sum_ms       INTEGER NOT NULL,
    lateness_le_250ms     INTEGER NOT NULL,
    lateness_le_500ms     INTEGER NOT NULL,
    lateness_le_1s        INTEGER NOT NULL,
    lateness_le_2500ms    INTEGER NOT NULL,
    lateness_le_5s        INTEGER NOT NULL,
    lateness_le_10s       INTEGER NOT NULL,
    lateness_le_30s       INTEGER NOT NULL,
    lateness_le_60s       INTEGER NOT NULL,
    lateness_le_120s      INTEGER NOT NULL,
    lateness_le_300s      INTEGER NOT NULL,
    lateness_le_600s      INTEGER NOT NULL,
    lateness_le_900s      INTEGER NOT NULL,
    delivery_events       INTEGER NOT NULL DEFAULT 0,
    delivery_sends        INTEGER NOT NULL DEFAULT 0,
    deliveries_delivered  INTEGER NOT NULL DEFAULT 0,
    deliveries_retrying   INTEGER NOT NULL DEFAULT 0,
    deliveries_failed     INTEGER NOT NULL DEFAULT 0,
    delivery_lost_lease   INTEGER NOT NULL DEFAULT 0,
    delivery_delay_max_ms INTEGER NOT NULL DEFAULT 0,
    caught                INTEGER NOT NULL DEFAULT 0,
    clocks_rearmed        INTEGER NOT NULL DEFAULT 0,
    waited_ms             INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO tick_history_new SELECT * FROM tick_history;
DROP TABLE tick_history;
ALTER TABLE tick_history_new RENAME TO tick_history;

CREATE INDEX tick_history_at ON tick_history (at);
CREATE INDEX tick_history_ok ON tick_history (kind, at, error) WHERE error IS NULL;
