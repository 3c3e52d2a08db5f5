-- Acting on failures (issue 27): which limit ended a `retry_exhausted` schedule, who
-- dismissed a refused one from Needs attention, and a message a session's next page shows.

-- Which cap ended it: 'attempts' (MAX_ATTEMPTS), 'lateness' (due_at + MAX_LATENESS_MS) or
-- 'retry_after' (Dee Wan asked to wait past MAX_RETRY_AFTER_MS). Written with the settle
-- or the unsent refusal; NULL for every other result, and for rows ended before this.
ALTER TABLE schedules ADD COLUMN ended_by TEXT
    CHECK (ended_by IS NULL OR (ended_by IN ('attempts', 'lateness', 'retry_after')
                                AND result_code = 'retry_exhausted'));

-- A site admin took a refused schedule out of Needs attention: who and when. Only a
-- refused row carries it, and all three are set together.
ALTER TABLE schedules ADD COLUMN dismissed_by TEXT;       -- Dee Wan person id
ALTER TABLE schedules ADD COLUMN dismissed_by_name TEXT;
ALTER TABLE schedules ADD COLUMN dismissed_at INTEGER
    CHECK ((dismissed_at IS NULL) = (dismissed_by IS NULL)
           AND (dismissed_at IS NULL) = (dismissed_by_name IS NULL)
           AND (dismissed_at IS NULL OR status = 'refused'));

-- What the session's next manage page says once, after an action whose subject is gone
-- (an endpoint deleted): taken by the page that shows it, as `reveal_endpoint_id` is.
ALTER TABLE sessions ADD COLUMN notice TEXT;
