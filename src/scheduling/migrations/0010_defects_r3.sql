-- Defects found after round three (issue 26): calls a visitor may make, counted; an
-- installation Dee Wan no longer accepts; rows purged past the retention window.

-- Calls that cost someone else, counted per key for a minute (repository/throttles.py): a
-- test event to an endpoint ('endpoint:<id>'), a create that reads Dee Wan
-- ('creates:<installation>:<person>'). A row is one call: under way until `busy_until`
-- (set to when it ended once it has), counted for a minute from `started_at`, then deleted
-- by the next call of any key.
CREATE TABLE throttle_slots (
    key        TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    started_at INTEGER NOT NULL,
    busy_until INTEGER NOT NULL,
    PRIMARY KEY (key, token)
) STRICT, WITHOUT ROWID;

CREATE INDEX throttle_slots_by_start ON throttle_slots (started_at);

-- When a call of the pages answered `plugin_unauthorized` (a launch exchange, a content
-- read): Dee Wan no longer accepts the installation, and its sessions are refused at once
-- unless its token was rotated since. The runner's refusals say the same through
-- `schedules_unauthorized`.
ALTER TABLE installations ADD COLUMN unauthorized_at INTEGER;

-- An installation's schedules refused `plugin_unauthorized`, by when: a session's check reads
-- one entry of it. Partial: only such refusals are in it.
CREATE INDEX schedules_unauthorized ON schedules (installation_id, updated_at)
    WHERE result_code = 'plugin_unauthorized';

-- Retention: delivered or failed webhook deliveries by when they ended, so the tick's purge
-- reads only those past the window (finished schedules are read through
-- `schedules_finished`, their attempts by their primary key).
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at)
    WHERE finished_at IS NOT NULL;
