-- Who cancelled a schedule, and when. A cancelled card says so by name.
-- Rows cancelled before this migration keep NULLs: nobody was recorded then.

ALTER TABLE schedules ADD COLUMN cancelled_by TEXT;       -- Dee Wan person id
ALTER TABLE schedules ADD COLUMN cancelled_by_name TEXT;
-- Only a cancelled row carries a canceller, and all three are set together.
ALTER TABLE schedules ADD COLUMN cancelled_at INTEGER
    CHECK ((cancelled_at IS NULL) = (cancelled_by IS NULL)
           AND (cancelled_at IS NULL) = (cancelled_by_name IS NULL)
           AND (cancelled_at IS NULL OR status = 'cancelled'));
