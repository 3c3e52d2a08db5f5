-- An editor works on many contents at once.

-- A launch per tab: each session has a public handle its pages carry (`?tab=`, a form's
-- `tab` field) and its own cookie named for it, so a second launch in another tab does not
-- take over the first. NULL for a session opened before this migration (its pages carry no
-- handle and use the latest launch's cookie, as every page did before). `news_since`: when
-- the person last looked before this launch; its first page says what became of their
-- schedules since then, once (then NULL).
ALTER TABLE sessions ADD COLUMN tab TEXT;
ALTER TABLE sessions ADD COLUMN news_since INTEGER;

-- What Scheduling keeps about a person of an installation: when they last launched it (a
-- calendar feed lives 30 days past that), and their calendar feed's token, hashed (NULL:
-- none, or revoked). `feed_whole`: the feed was made from a manage launch, so it names
-- every content by title; a content launch's names only the contents of the person's own
-- schedules. Forgotten at any launch once their latest launch is past the retention window
-- (`sessions.create`), and by delete-data.
CREATE TABLE people (
    installation_id TEXT    NOT NULL,  -- no foreign key: delete-data removes its rows itself
    person_id       TEXT    NOT NULL,
    launched_at     INTEGER NOT NULL,
    feed_hash       TEXT    UNIQUE,
    feed_made_at    INTEGER,
    feed_whole      INTEGER NOT NULL DEFAULT 0 CHECK (feed_whole IN (0, 1)),
    PRIMARY KEY (installation_id, person_id)
) STRICT;

CREATE INDEX people_by_launch ON people (launched_at);
