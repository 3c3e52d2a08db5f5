-- What `GET /admin/status` reports about the runner.

-- The last tick that finished, in one row: each tick overwrites it in the same
-- batch as its settles, so recording costs no extra round trip.
CREATE TABLE runner_last_tick (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    at          INTEGER NOT NULL,  -- the tick's instant (epoch ms)
    duration_ms INTEGER NOT NULL CHECK (duration_ms >= 0),
    report      TEXT    NOT NULL   -- JSON object of counts, as logged
) STRICT;

-- Counting the rows finished recently reads this range only. Partial, so the
-- runner's due-row query can never pick it over its own two indexes.
CREATE INDEX schedules_finished ON schedules (status, updated_at)
    WHERE status IN ('completed', 'refused', 'cancelled', 'superseded');
