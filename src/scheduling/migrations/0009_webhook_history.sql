-- Each tick's webhook counts in its history row (runner/report.py's webhook fields), so
-- `/admin/status` reports the last tick's deliveries as it reports its sends. Rows written
-- before this migration count zero.

ALTER TABLE tick_history ADD COLUMN webhook_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhook_sends INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhooks_delivered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhooks_retrying INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhooks_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhook_lost_lease INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tick_history ADD COLUMN webhook_delay_max_ms INTEGER NOT NULL DEFAULT 0;
