-- The changes Dee Wan listed for a content session's person when their page was shown
-- (`workflow.transitions`), as a JSON array of [kind, to], rewritten at each content read.
-- A cancel is decided on them, so it never calls Dee Wan. NULL: no page shown yet; a
-- session started before this migration may cancel once its page has been shown again.

ALTER TABLE sessions ADD COLUMN offered_transitions TEXT;
