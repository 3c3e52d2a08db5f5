-- Agents propose, people decide (issue 39): keys a person mints for an agent, and what the
-- agents propose, which become schedules only when a person confirms them on the page.

-- An agent key acts for the person who minted it, in one installation, and never for more
-- than that person could do when they minted it: a manage launch's key reaches the whole
-- installation; a content launch's key only that content, and proposes only the changes Dee
-- Wan offered the person (`offered_transitions`, as sessions keep them). The key itself
-- (`dwk_` + 43) is shown once and kept only as its SHA-256 hash.
CREATE TABLE agent_keys (
    id                  TEXT    PRIMARY KEY,
    installation_id     TEXT    NOT NULL REFERENCES installations (id),
    key_hash            TEXT    NOT NULL UNIQUE,
    name                TEXT    NOT NULL,
    person_id           TEXT    NOT NULL,
    person_name         TEXT    NOT NULL,
    content_id          TEXT,              -- NULL: the whole installation (a manage launch)
    offered_transitions TEXT    NOT NULL,  -- JSON [[kind, to], …]; '*' on a manage launch
    created_at          INTEGER NOT NULL,
    expires_at          INTEGER NOT NULL,
    revoked_at          INTEGER,
    last_used_at        INTEGER
) STRICT;

CREATE INDEX agent_keys_by_installation ON agent_keys (installation_id, created_at);

-- What an agent asked for: a change of a content at a wall time in a zone, with a note for
-- the person. `status`: pending until a person confirms or declines it, the agent withdraws
-- it, or its time passes (read as expired; nothing rewrites it).
CREATE TABLE proposals (
    id                  TEXT    PRIMARY KEY,
    installation_id     TEXT    NOT NULL REFERENCES installations (id),
    key_id              TEXT    NOT NULL,
    key_name            TEXT    NOT NULL,
    person_name         TEXT    NOT NULL,  -- whom the key acts for
    content_id          TEXT    NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('publish', 'unpublish')),
    to_state            TEXT,              -- NULL: the change of that kind Dee Wan offers
    local_time          TEXT    NOT NULL,
    timezone            TEXT    NOT NULL,
    fold                TEXT    CHECK (fold IN ('earlier', 'later')),
    due_at              INTEGER NOT NULL,
    note                TEXT    NOT NULL DEFAULT '',
    status              TEXT    NOT NULL,  -- pending, confirmed, declined, withdrawn
    schedule_id         TEXT,              -- the schedule a confirm made
    decided_by_name     TEXT,
    created_at          INTEGER NOT NULL,
    decided_at          INTEGER,
    CHECK (status IN ('pending', 'confirmed', 'declined', 'withdrawn'))
) STRICT;

CREATE INDEX proposals_pending ON proposals (installation_id, content_id, due_at)
    WHERE status = 'pending';
CREATE INDEX proposals_by_schedule ON proposals (schedule_id) WHERE schedule_id IS NOT NULL;

-- Agent calls by tool and outcome (ok, refused, invalid): running totals for the metrics.
CREATE TABLE agent_calls (
    tool    TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    calls   INTEGER NOT NULL,
    PRIMARY KEY (tool, outcome)
) STRICT;

-- An endpoint may hear of a new proposal (`proposal.created`). SQLite cannot change a CHECK,
-- so the subscriptions are made again with the rows they hold.
CREATE TABLE notification_subscriptions_new (
    endpoint_id TEXT NOT NULL REFERENCES notification_endpoints (id),
    event_type  TEXT NOT NULL CHECK (event_type IN
                    ('schedule.refused', 'schedule.completed', 'schedule.retrying',
                     'proposal.created')),
    PRIMARY KEY (endpoint_id, event_type)
) STRICT;
INSERT INTO notification_subscriptions_new (endpoint_id, event_type)
    SELECT endpoint_id, event_type FROM notification_subscriptions;
DROP TABLE notification_subscriptions;
ALTER TABLE notification_subscriptions_new RENAME TO notification_subscriptions;
