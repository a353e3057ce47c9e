-- The newest change ever recorded, in one row that compaction never deletes. `check`
-- compares the session row with it, so a state that no change explains (a write that
-- bypassed the session_feed trigger, e.g. through incremental blob I/O) is found even
-- after every change was compacted away.
CREATE TABLE session_feed_tip (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  username TEXT,
  is_logged_in INTEGER NOT NULL,
  at TEXT NOT NULL
);

-- The newest change kept; or, when none is (compacted before this migration, or never
-- written), the session row as it is now, at the head cursor.
INSERT INTO session_feed_tip (id, seq, username, is_logged_in, at)
SELECT 1, seq, new_username, new_is_logged_in, at FROM session_changes
WHERE seq = (SELECT max(seq) FROM session_changes)
UNION ALL
SELECT 1, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0),
  username, is_logged_in, updated_at
FROM session WHERE NOT EXISTS (SELECT 1 FROM session_changes);

-- Every feed row newer than the tip, written by session_feed or typed by hand, becomes
-- the tip, in the same transaction.
CREATE TRIGGER session_feed_tip_advance AFTER INSERT ON session_changes
WHEN NEW.seq > (SELECT seq FROM session_feed_tip WHERE id = 1)
BEGIN
  UPDATE session_feed_tip SET
    seq = NEW.seq, username = NEW.new_username, is_logged_in = NEW.new_is_logged_in, at = NEW.at
  WHERE id = 1;
END;

CREATE TRIGGER session_feed_tip_refuse_delete BEFORE DELETE ON session_feed_tip
BEGIN
  SELECT RAISE(ABORT, 'the session_feed_tip row cannot be deleted; check compares the session with it');
END;

CREATE TRIGGER session_feed_tip_refuse_insert BEFORE INSERT ON session_feed_tip
BEGIN
  SELECT RAISE(ABORT, 'the session_feed_tip table holds exactly one row');
END;
