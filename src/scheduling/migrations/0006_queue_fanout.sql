-- Fanning the runner's sends out over a queue (issue 20).

-- When a tick last put this waiting row in a queue message: the next tick leaves it to the
-- message for LEASE_MS and then dispatches it again (a message can be lost). A claim clears
-- it. Never ownership: only the claim's compare-and-set owns a row.
ALTER TABLE schedules ADD COLUMN dispatched_at INTEGER;

-- One installation's live claims, counted by every queue consumer's claim so that its
-- Dee Wan never has more than MAX_IN_FLIGHT_PER_INSTALLATION of our requests at once.
CREATE INDEX schedules_running_by_installation ON schedules (installation_id, lease_until)
    WHERE status = 'running';
