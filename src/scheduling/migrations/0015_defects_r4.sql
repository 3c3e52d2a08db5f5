-- Defects found after round four (issue 37).

-- When a launch exchange with the installation's token last succeeded: Dee Wan accepts the
-- token again, so a `plugin_unauthorized` heard before then no longer refuses its sessions
-- (repository/sessions.py).
ALTER TABLE installations ADD COLUMN token_accepted_at INTEGER;
