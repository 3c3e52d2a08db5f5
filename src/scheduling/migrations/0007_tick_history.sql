-- The runner over time (issue 21): one row per tick and per queue consumer invocation,
-- kept 7 days; running totals that only ever grow; each installation's last send.

-- One row per invocation, written in the invocation's own final write (a failed one writes
-- its row in one more write, with its exception's type). Columns after `backlog` are the
-- tick's report (runner/report.py), one column per field, with the same names.
CREATE TABLE tick_history (
    at                  INTEGER NOT NULL,  -- the invocation's instant (epoch ms)
    kind                TEXT    NOT NULL CHECK (kind IN ('tick', 'consumer')),
    error               TEXT,              -- a failed invocation: its exception's type only
    duration_ms         INTEGER NOT NULL CHECK (duration_ms >= 0),
    backlog             INTEGER NOT NULL,  -- due rows left when it ended
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
    -- Send lateness (due_at -> the request left) as histogram buckets with fixed bounds:
    -- sends at most that late (cumulative, as Prometheus counts them), and their sum.
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
    lateness_le_900s    INTEGER NOT NULL
) STRICT;

-- The charts read a window by `at`; pruning deletes the oldest few by it.
CREATE INDEX tick_history_at ON tick_history (at);
-- The last tick that ran to its end: /healthz reads this index alone (it holds `error`).
CREATE INDEX tick_history_ok ON tick_history (kind, at, error) WHERE error IS NULL;

-- What /admin/status showed before the history existed becomes its first row.
INSERT INTO tick_history
SELECT at, 'tick', NULL, duration_ms, 0,
       coalesce(json_extract(report, '$.cron_delay_ms'), 0),
       coalesce(json_extract(report, '$.due'), 0),
       coalesce(json_extract(report, '$.claimed'), 0),
       coalesce(json_extract(report, '$.batches'), 0),
       coalesce(json_extract(report, '$.sends'), 0),
       coalesce(json_extract(report, '$.completed'), 0),
       coalesce(json_extract(report, '$.refused'), 0),
       coalesce(json_extract(report, '$.retrying'), 0),
       coalesce(json_extract(report, '$.refused_unsent'), 0),
       coalesce(json_extract(report, '$.refused_unsent_late'), 0),
       coalesce(json_extract(report, '$.lost_claim'), 0),
       coalesce(json_extract(report, '$.lost_lease'), 0),
       coalesce(json_extract(report, '$.lateness_p50_ms'), 0),
       coalesce(json_extract(report, '$.lateness_max_ms'), 0),
       coalesce(json_extract(report, '$.lateness_max_ms'), 0),
       coalesce(json_extract(report, '$.d1_statements'), 0),
       coalesce(json_extract(report, '$.d1_round_trips'), 0),
       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
  FROM runner_last_tick;
DROP TABLE runner_last_tick;

-- Running totals behind /admin/metrics' counters: one row per counter series
-- ('sends:completed', 'refusals:scheduled_target_stale', …), only ever added to, in the
-- same write as the history row that counts the same work. Pruning the history never
-- lowers them, so a counter never decreases.
CREATE TABLE runner_totals (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL CHECK (value >= 0)
) STRICT, WITHOUT ROWID;

-- When the runner last sent a command for the installation, written with the settle that
-- finishes the attempt; the operator page lists installations by it.
ALTER TABLE installations ADD COLUMN last_sent_at INTEGER;
CREATE INDEX installations_by_last_send ON installations (last_sent_at);
