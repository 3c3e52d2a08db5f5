-- Defects found after round four (issue 37).

-- When a launch exchange with the installation's token last succeeded: Dee Wan accepts the
-- token again, so a `plugin_unauthorized` heard before then no longer refuses its sessions
-- (repository/sessions.py).
ALTER TABLE installations ADD COLUMN token_accepted_at INTEGER;

-- The last revision given to a schedule of each installation, content and kind. A schedule's
-- revision is this plus one (protocol: r1, then +1 for each later one), kept here because the
-- retention purge deletes the schedules themselves: counted from them, the next schedule of a
-- content whose schedules were all purged started at r1 again. Delete-data removes its rows.
CREATE TABLE schedule_revisions (
    installation_id TEXT    NOT NULL,
    content_id      TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    last_revision   INTEGER NOT NULL CHECK (last_revision >= 1),
    PRIMARY KEY (installation_id, content_id, kind)
) STRICT, WITHOUT ROWID;

INSERT INTO schedule_revisions (installation_id, content_id, kind, last_revision)
SELECT installation_id, content_id, kind, MAX(revision) FROM schedules
 GROUP BY installation_id, content_id, kind;
