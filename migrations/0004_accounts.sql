-- The roster: one row per account. `id` is the account's identifier; AUTOINCREMENT keeps
-- identifiers from ever being reused, also after every account was removed. `seq` is the
-- cursor of the newest change concerning the account.
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL UNIQUE,
  is_logged_in INTEGER NOT NULL DEFAULT 0 CHECK (is_logged_in IN (0, 1)),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  seq INTEGER NOT NULL DEFAULT 0
);

-- Which account is active: exactly one row, id = 1; `account_id` NULL when none is. `seq`
-- is the cursor of the newest change that moved the pointer.
CREATE TABLE active_account (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  account_id INTEGER,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  seq INTEGER NOT NULL DEFAULT 0
);

-- The feed's head: the newest cursor handed out, kept by AUTOINCREMENT also after the rows
-- that had it are deleted. The next change gets the cursor after it.
CREATE VIEW session_feed_head AS
SELECT max(coalesce((SELECT max(seq) FROM session_changes), 0),
           coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0)) AS seq;

-- Who records a change: a write of the library gives the rows it changes the cursor of the
-- entry it records for them, and inserts that entry itself. The triggers below record every
-- other edit as one entry with the origin 'external': an UPDATE that leaves `seq` as it was,
-- an INSERT or a DELETE of a row whose `seq` is not ahead of the feed's head.

-- The session of a 1.x file becomes the first account, active, with its login state and
-- the cursor of the newest change recorded; a session that never had a username becomes
-- an empty roster.
INSERT INTO accounts (id, username, is_logged_in, updated_at, seq)
SELECT 1, username, is_logged_in, updated_at, (SELECT seq FROM session_feed_tip WHERE id = 1)
FROM session WHERE id = 1 AND username IS NOT NULL;

INSERT INTO active_account (id, account_id, updated_at, seq)
SELECT 1, CASE WHEN username IS NULL THEN NULL ELSE 1 END, updated_at, (SELECT seq FROM session_feed_tip WHERE id = 1)
FROM session WHERE id = 1;

-- Every feed row names its account and whether that account was and is the active one.
-- A 1.x row concerns the one session, active whenever it had a username.
ALTER TABLE session_changes ADD COLUMN account_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE session_changes ADD COLUMN was_active INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_changes ADD COLUMN is_active INTEGER NOT NULL DEFAULT 0;
UPDATE session_changes SET was_active = old_username IS NOT NULL, is_active = new_username IS NOT NULL;

-- The 1.x session row gives way to a view of the active account, so that the shell's
-- `SELECT * FROM session` and `UPDATE session SET is_logged_in = 0` keep working.
DROP TABLE session;

CREATE VIEW session AS
SELECT 1 AS id, a.username AS username, coalesce(a.is_logged_in, 0) AS is_logged_in,
  coalesce(a.updated_at, p.updated_at) AS updated_at
FROM active_account p LEFT JOIN accounts a ON a.id = p.account_id
WHERE p.id = 1;

-- An UPDATE of the view updates the active account, and the trigger on `accounts` records
-- it. With none, a new username makes a new account of that name (session_join).
CREATE TRIGGER session_update INSTEAD OF UPDATE ON session
BEGIN
  SELECT RAISE(ABORT, 'no account is active: set a username too, and an account of that name joins, active')
  WHERE (SELECT account_id FROM active_account WHERE id = 1) IS NULL AND NEW.username IS NULL
    AND NEW.is_logged_in IS NOT 0;
  UPDATE accounts SET username = NEW.username, is_logged_in = NEW.is_logged_in
  WHERE id = (SELECT account_id FROM active_account WHERE id = 1)
    AND (username IS NOT NEW.username OR is_logged_in IS NOT NEW.is_logged_in);
END;

-- With no active account, a username makes a new account of that name, active (as the 1.x
-- row took a first username), recorded here as one feed row: the new account and the
-- pointer carry the cursor that row is about to get, ahead of the head, which keeps the
-- triggers below aside. Inside the trigger, last_insert_rowid() is the new account's id,
-- and 'now' is one instant for every statement of the UPDATE (SQLite fixes it per step).
-- (A trigger of its own, for an UPDATE that sets `username`: an UPDATE of the login state
-- alone neither compiles nor runs it.)
CREATE TRIGGER session_join INSTEAD OF UPDATE OF username ON session
WHEN NEW.username IS NOT NULL AND (SELECT account_id FROM active_account WHERE id = 1) IS NULL
BEGIN
  INSERT INTO accounts (username, is_logged_in, updated_at, seq) VALUES (
    NEW.username, NEW.is_logged_in, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), (SELECT seq FROM session_feed_head) + 1
  );
  UPDATE active_account SET account_id = last_insert_rowid(), updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT seq FROM session_feed_head) + 1
  WHERE id = 1;
  INSERT INTO session_changes (
    at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'external', last_insert_rowid(), NULL, NEW.username, 0,
    NEW.is_logged_in, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 0, 1
  );
END;

CREATE TRIGGER session_refuse_insert INSTEAD OF INSERT ON session
BEGIN
  SELECT RAISE(ABORT, 'session shows the active account; INSERT INTO accounts to add one');
END;

CREATE TRIGGER session_refuse_delete INSTEAD OF DELETE ON session
BEGIN
  SELECT RAISE(ABORT, 'session shows the active account; DELETE FROM accounts to remove one');
END;

-- The roster's limit, also for rows typed by hand.
CREATE TRIGGER accounts_limit BEFORE INSERT ON accounts
WHEN (SELECT count(*) FROM accounts) >= 1000
BEGIN
  SELECT RAISE(ABORT, 'the roster holds 1000 accounts, its limit; delete one first');
END;

CREATE TRIGGER accounts_new_id BEFORE INSERT ON accounts
WHEN NEW.id > 0 AND NEW.id <= coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'accounts'), 0)
BEGIN
  SELECT RAISE(ABORT, 'account ids are never reused; leave id out and SQLite numbers the account');
END;

CREATE TRIGGER accounts_keep_id BEFORE UPDATE OF id ON accounts
WHEN OLD.id IS NOT NEW.id
BEGIN
  SELECT RAISE(ABORT, 'an account''s id never changes; insert a new account instead');
END;

CREATE TRIGGER active_account_exists BEFORE UPDATE OF account_id ON active_account
WHEN NEW.account_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
BEGIN
  SELECT RAISE(ABORT, 'active_account.account_id must be the id of an account, or NULL for none');
END;

CREATE TRIGGER active_account_refuse_insert BEFORE INSERT ON active_account
BEGIN
  SELECT RAISE(ABORT, 'the active_account table holds exactly one row; UPDATE it instead');
END;

CREATE TRIGGER active_account_refuse_delete BEFORE DELETE ON active_account
BEGIN
  SELECT RAISE(ABORT, 'the active_account row cannot be deleted; set account_id to NULL for none');
END;

-- Edits by other clients: each becomes one feed row, origin 'external', in the same
-- transaction. The nested UPDATEs touch only columns these triggers do not watch.
CREATE TRIGGER accounts_external_insert AFTER INSERT ON accounts
WHEN NEW.seq <= (SELECT seq FROM session_feed_head)
BEGIN
  INSERT INTO session_changes (
    at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'external', NEW.id, NULL, NEW.username, 0, NEW.is_logged_in,
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 0, 0
  );
  UPDATE accounts SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT max(seq) FROM session_changes)
  WHERE id = NEW.id;
END;

CREATE TRIGGER accounts_external_update AFTER UPDATE OF username, is_logged_in ON accounts
WHEN NEW.seq IS OLD.seq
  AND (OLD.username IS NOT NEW.username OR OLD.is_logged_in IS NOT NEW.is_logged_in)
BEGIN
  INSERT INTO session_changes (
    at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'external', NEW.id, OLD.username, NEW.username, OLD.is_logged_in,
    NEW.is_logged_in, OLD.updated_at, (SELECT account_id IS NEW.id FROM active_account WHERE id = 1),
    (SELECT account_id IS NEW.id FROM active_account WHERE id = 1)
  );
  UPDATE accounts SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT max(seq) FROM session_changes)
  WHERE id = NEW.id;
END;

CREATE TRIGGER accounts_external_delete AFTER DELETE ON accounts
WHEN OLD.seq <= (SELECT seq FROM session_feed_head)
BEGIN
  INSERT INTO session_changes (
    at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'external', OLD.id, OLD.username, NULL, OLD.is_logged_in, 0,
    OLD.updated_at, (SELECT account_id IS OLD.id FROM active_account WHERE id = 1), 0
  );
  -- Nothing is promoted: the pointer to a removed account becomes NULL (the feed row above
  -- records it; active_account_external leaves a pointer to a deleted account unrecorded).
  UPDATE active_account SET account_id = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT max(seq) FROM session_changes)
  WHERE id = 1 AND account_id IS OLD.id;
END;

CREATE TRIGGER active_account_external AFTER UPDATE OF account_id ON active_account
WHEN NEW.seq IS OLD.seq
  AND OLD.account_id IS NOT NEW.account_id
  AND (NEW.account_id IS NOT NULL OR EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account_id))
BEGIN
  INSERT INTO session_changes (
    at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) SELECT
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'external', id, username, username, is_logged_in, is_logged_in,
    updated_at, id IS OLD.account_id, id IS NEW.account_id
  FROM accounts WHERE id = coalesce(NEW.account_id, OLD.account_id);
  UPDATE accounts SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT max(seq) FROM session_changes)
  WHERE id = coalesce(NEW.account_id, OLD.account_id);
  UPDATE active_account SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    seq = (SELECT max(seq) FROM session_changes)
  WHERE id = 1;
END;
