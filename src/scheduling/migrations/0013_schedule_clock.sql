-- An alarm clock per installation (issue 30): each installation's due rows and its next due
-- time read from an index of its own, and the clocks' wake-ups in the tick history.

-- One installation's waiting rows by when they are due: its clock's claim and its next
-- wake-up read a few entries of this (running rows: `schedules_running_by_installation`).
CREATE INDEX schedules_waiting_by_installation ON schedules (installation_id, next_attempt_at)
    WHERE status IN ('pending', 'retrying');

-- The tick history gains a kind, 'alarm' (a clock's wake-up), and three counts. SQLite
-- cannot change a CHECK, so the table is made again with the rows it holds.
--   caught          a watchdog tick: the rows it sent (or ended unsent) that no clock took
--   clocks_rearmed  a watchdog tick: the clocks it found asleep past what they had due
--   waited_ms       an alarm: how long it waited, awake, for its due second
-- For an alarm, `cron_delay_ms` is how late its wake-up came after the time it was set for.
CREATE TABLE tick_history_new (
    at                  INTEGER NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('tick', 'consumer', 'alarm')),
    error               TEXT,
    duration_ms         INTEGER NOT NULL CHECK (duration_ms >= 0),
    backlog             INTEGER NOT NULL,
    cron_delay_ms       INTEGER NOT NULL,
    due                 INTEGER NOT NULL,
    claimed             INTEGER NOT NULL,
    batches             INTEGER NOT NULL,
    sends               INTEGER NOT NULL,
    completed           INTEGER NOT NULL,
    refused             INTEGER NOT NULL,
    retrying            INTEGER NOT NULL,
    refused_unsent      INTEGER NOT NULL,
    refused_unsent_late INTEGER NOT NULL,
    lost_claim          INTEGER NOT NULL,
    lost_lease          INTEGER NOT NULL,
    lateness_p50_ms     INTEGER NOT NULL,
    lateness_p99_ms     INTEGER NOT NULL,
    lateness_max_ms     INTEGER NOT NULL,
    d1_statements       INTEGER NOT NULL,
    d1_round_trips      INTEGER NOT NULL,
    limit_reached       INTEGER NOT NULL,
    lateness_sum_ms     INTEGER NOT NULL,
    lateness_le_250ms   INTEGER NOT NULL,
    lateness_le_500ms   INTEGER NOT NULL,
    lateness_le_1s      INTEGER NOT NULL,
    lateness_le_2500ms  INTEGER NOT NULL,
    lateness_le_5s      INTEGER NOT NULL,
    lateness_le_10s     INTEGER NOT NULL,
    lateness_le_30s     INTEGER NOT NULL,
    lateness_le_60s     INTEGER NOT NULL,
    lateness_le_120s    INTEGER NOT NULL,
    lateness_le_300s    INTEGER NOT NULL,
    lateness_le_600s    INTEGER NOT NULL,
    lateness_le_900s    INTEGER NOT NULL,
    webhook_events       INTEGER NOT NULL DEFAULT 0,
    webhook_sends        INTEGER NOT NULL DEFAULT 0,
    webhooks_delivered   INTEGER NOT NULL DEFAULT 0,
    webhooks_retrying    INTEGER NOT NULL DEFAULT 0,
    webhooks_failed      INTEGER NOT NULL DEFAULT 0,
    webhook_lost_lease   INTEGER NOT NULL DEFAULT 0,
    webhook_delay_max_ms INTEGER NOT NULL DEFAULT 0,
    caught               INTEGER NOT NULL DEFAULT 0,
    clocks_rearmed       INTEGER NOT NULL DEFAULT 0,
    waited_ms            INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO tick_history_new (at, kind, error, duration_ms, backlog, cron_delay_ms, due,
    claimed, batches, sends, completed, refused, retrying, refused_unsent,
    refused_unsent_late, lost_claim, lost_lease, lateness_p50_ms, lateness_p99_ms,
    lateness_max_ms, d1_statements, d1_round_trips, limit_reached, lateness_sum_ms,
    lateness_le_250ms, lateness_le_500ms, lateness_le_1s, lateness_le_2500ms,
    lateness_le_5s, lateness_le_10s, lateness_le_30s, lateness_le_60s, lateness_le_120s,
    lateness_le_300s, lateness_le_600s, lateness_le_900s, webhook_events, webhook_sends,
    webhooks_delivered, webhooks_retrying, webhooks_failed, webhook_lost_lease,
    webhook_delay_max_ms)
SELECT at, kind, error, duration_ms, backlog, cron_delay_ms, due,
    claimed, batches, sends, completed, refused, retrying, refused_unsent,
    refused_unsent_late, lost_claim, lost_lease, lateness_p50_ms, lateness_p99_ms,
    lateness_max_ms, d1_statements, d1_round_trips, limit_reached, lateness_sum_ms,
    lateness_le_250ms, lateness_le_500ms, lateness_le_1s, lateness_le_2500ms,
    lateness_le_5s, lateness_le_10s, lateness_le_30s, lateness_le_60s, lateness_le_120s,
    lateness_le_300s, lateness_le_600s, lateness_le_900s, webhook_events, webhook_sends,
    webhooks_delivered, webhooks_retrying, webhooks_failed, webhook_lost_lease,
    webhook_delay_max_ms
  FROM tick_history;
DROP TABLE tick_history;
ALTER TABLE tick_history_new RENAME TO tick_history;

CREATE INDEX tick_history_at ON tick_history (at);
CREATE INDEX tick_history_ok ON tick_history (kind, at, error) WHERE error IS NULL;
