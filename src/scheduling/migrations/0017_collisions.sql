-- Collisions (issue 38): a publish and an unpublish of one content, both waiting. Whichever
-- runs first changes the content's workflow revision (and, for a publish, its published
-- version), so the other one's pin is out of date from then on: Dee Wan would refuse it
-- `scheduled_target_stale` at its time. The moment the first is done, the other is marked
-- here, so its card, Needs attention and the notification endpoints say so at once.
--   made_stale_by  the schedule whose completion made this one's pin out of date
--   made_stale_at  when (that settle's instant)
ALTER TABLE schedules ADD COLUMN made_stale_by TEXT;
ALTER TABLE schedules ADD COLUMN made_stale_at INTEGER;

-- Marked by the settle itself, whichever runner settles (a tick or a
-- clock's alarm): a trigger costs the runner no D1 statement of its own. A later migration
-- that makes `schedules` again (a new table renamed into place) drops this trigger with the
-- old table, and must create it again.
CREATE TRIGGER schedules_made_stale AFTER UPDATE OF status ON schedules
WHEN NEW.status = 'completed' AND OLD.status <> 'completed'
BEGIN
    UPDATE schedules SET made_stale_by = NEW.id, made_stale_at = NEW.updated_at
     WHERE installation_id = NEW.installation_id AND content_id = NEW.content_id
       AND kind <> NEW.kind AND status IN ('pending', 'retrying') AND made_stale_by IS NULL;
END;
