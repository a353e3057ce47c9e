-- The session: exactly one row, id = 1. `username` and `is_logged_in` are the public
-- contract that people type into the sqlite3 shell.
CREATE TABLE session (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  username TEXT,
  is_logged_in INTEGER NOT NULL DEFAULT 0 CHECK (is_logged_in IN (0, 1)),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_by TEXT NOT NULL DEFAULT 'external',
  -- Library writes bump this token; a change that leaves it alone came from elsewhere.
  write_token INTEGER NOT NULL DEFAULT 0
);

INSERT INTO session (id) VALUES (1);

CREATE TRIGGER session_refuse_delete BEFORE DELETE ON session
BEGIN
  SELECT RAISE(ABORT, 'the session row cannot be deleted; set is_logged_in = 0 to sign out');
END;

CREATE TRIGGER session_refuse_insert BEFORE INSERT ON session
BEGIN
  SELECT RAISE(ABORT, 'the session table holds exactly one row; UPDATE it instead');
END;

-- The change-feed. `seq` is the cursor; AUTOINCREMENT keeps cursors from ever being
-- reused, also after compaction deletes every row.
CREATE TABLE session_changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  origin TEXT NOT NULL,
  old_username TEXT,
  new_username TEXT,
  old_is_logged_in INTEGER NOT NULL,
  new_is_logged_in INTEGER NOT NULL,
  old_updated_at TEXT NOT NULL
);

-- Every committed change of username or login state writes one feed row in the same
-- transaction; a no-op update writes none. The nested UPDATE only touches columns this
-- trigger does not watch, so it never fires it again.
CREATE TRIGGER session_feed AFTER UPDATE OF username, is_logged_in ON session
WHEN OLD.username IS NOT NEW.username OR OLD.is_logged_in IS NOT NEW.is_logged_in
BEGIN
  INSERT INTO session_changes (
    at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at
  ) VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    CASE WHEN NEW.write_token IS OLD.write_token THEN 'external' ELSE NEW.updated_by END,
    OLD.username, NEW.username, OLD.is_logged_in, NEW.is_logged_in, OLD.updated_at
  );
  UPDATE session SET
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    updated_by = CASE WHEN NEW.write_token IS OLD.write_token THEN 'external' ELSE NEW.updated_by END
  WHERE id = 1;
END;
