-- Chat endpoints, a retry horizon of days, and deliveries tried again on demand (issue 28).

-- An endpoint is a signed webhook or a Slack-compatible chat incoming webhook. A chat
-- endpoint's URL is its secret: it is kept only sealed (in `secret_sealed`), and `url` holds
-- what the pages show of it (its host and its last 4 characters).
ALTER TABLE notification_endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'webhook'
    CHECK (kind IN ('webhook', 'chat'));
-- A chat endpoint is sent at most one message a minute: the earliest its next may leave.
ALTER TABLE notification_endpoints ADD COLUMN next_message_at INTEGER;
-- Why it was disabled: 'gone' (it answered 410 Gone) or 'failing' (nothing accepted for days).
ALTER TABLE notification_endpoints ADD COLUMN disabled_reason TEXT
    CHECK (disabled_reason IN ('gone', 'failing'));
UPDATE notification_endpoints SET disabled_reason = 'gone' WHERE disabled_at IS NOT NULL;

-- A delivery sent again on demand (Send again, Replay failures) retries from that moment, not
-- from its event: the horizon counts from here when it is set.
ALTER TABLE webhook_deliveries ADD COLUMN retries_from INTEGER;

-- The content's title as the editor saw it when scheduling, sealed under TOKEN_KEY (bound to
-- the installation and the schedule): a chat message names the content the way people know
-- it, and no title is ever stored readable. Rows scheduled before this migration have none
-- (their chat lines name the content's id).
ALTER TABLE schedules ADD COLUMN title_sealed TEXT;
