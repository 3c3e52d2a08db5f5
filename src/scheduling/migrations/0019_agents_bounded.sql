-- What agents may make, and how long it is kept.

-- When Dee Wan last confirmed the rights of a key's person: when it was minted (after a call
-- to Dee Wan), then each time its person opens Scheduling where it was minted (a manage
-- launch for a manage key, a read of its content for a content key). A key is usable only
-- within a day of it. A key of before starts from its mint.
ALTER TABLE agent_keys ADD COLUMN checked_at INTEGER NOT NULL DEFAULT 0;
UPDATE agent_keys SET checked_at = created_at;

-- A revoked key ends when it is revoked: `expires_at` is when every key ended, by which the
-- retention purge finds those that ended long enough ago.
UPDATE agent_keys SET expires_at = revoked_at WHERE revoked_at < expires_at;
CREATE INDEX agent_keys_ended ON agent_keys (expires_at);

-- The proposals an installation's agents made in the last day (any status), counted before
-- one more is made.
CREATE INDEX proposals_made ON proposals (installation_id, created_at);

-- Proposals that ended undecided (their time passed), declined or withdrawn, by when they
-- ended: the purge's.
CREATE INDEX proposals_ended ON proposals (coalesce(decided_at, due_at))
    WHERE status <> 'confirmed';
