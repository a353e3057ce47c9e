-- The roster: accounts, one of them active, as in the SQLite file (migrations/0004_accounts.sql),
-- with the same psql-facing names: `accounts`, `active_account`, and `session`, a view of the
-- active account that keeps 1.x habits (`SELECT * FROM session`, `UPDATE session SET
-- is_logged_in = false`) working on the active account.
--
-- Run with search_path set to '<schema>, pg_temp', as 0002 (the functions keep that path).
--
-- WHERE THE HEAD LIVES
-- The 1.x session row held the head cursor, the write token and the lock that numbers
-- changes. They move to `session_writer`, one row that is no part of the model: `head` (the
-- newest cursor ever handed out), `write_token` (a library write sets a fresh one, so that a
-- connection lost during COMMIT can tell whether its transaction committed), `origin` (set by
-- a library write for its own transaction only; NULL in every committed state, so any other
-- client's change is recorded as 'external'), `activates` (a library write's request that the
-- account it changes next becomes the active one), `last_account_id` (account ids are handed
-- out from it, so none is ever given twice) and `entry` (the change being recorded, NULL at
-- rest). `session` becomes a view.
--
-- HOW CHANGES ARE RECORDED
-- Every change of the roster, the library's and any other client's alike, goes through the
-- triggers below, in the same transaction, one feed row per changed account row or pointer:
--   * roster_lock (BEFORE each statement on accounts or active_account) takes the
--     session_writer row's lock before any row of the roster is locked, as library writes do,
--     so changes are numbered one after the other in commit order (see 0001: the lock is held
--     to COMMIT, the next writer waits and then reads the committed head), and writers never
--     deadlock on the order of their locks.
--   * roster_feed (BEFORE each row of accounts, BEFORE UPDATE of active_account) checks the
--     model (unique usernames, at most 1000 accounts, ids never change, the pointer names an
--     account), stamps the account row with the change's cursor and time, and hands the
--     change to session_writer.entry.
--   * session_feed (BEFORE UPDATE of session_writer) is the only writer of feed rows and the
--     only mover of the head: it inserts `entry` at head + 1, sets NEW.head itself (an UPDATE
--     that sets the head is refused), and notifies the schema's channel.
--     session_changes_guard (0003's rule, now reading session_writer) refuses any other feed
--     row, and at COMMIT any entry the roster does not agree with.
--   * An added account that becomes active, or a removed active account, moves the pointer
--     with the account's own change: roster_feed on active_account sees that the newest entry
--     already records that move and records none (one entry per change, as the library plans
--     it). A library write thus runs plain INSERT/UPDATE/DELETE on accounts and UPDATE on
--     active_account, each statement one planned change.

-- The change-numbering row; the library's writes lock it first.
CREATE TABLE session_writer (
  id integer PRIMARY KEY CHECK (id = 1),
  origin text,
  activates boolean NOT NULL DEFAULT false,
  write_token bigint NOT NULL DEFAULT 0,
  head bigint NOT NULL DEFAULT 0,
  last_account_id bigint NOT NULL DEFAULT 0,
  entry jsonb
);

-- The roster: one row per account. `seq` is the cursor of the account's newest change,
-- `updated_at` its time.
CREATE TABLE accounts (
  id bigint PRIMARY KEY,
  username text NOT NULL UNIQUE,
  is_logged_in boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  seq bigint NOT NULL DEFAULT 0
);

-- Which account is active: exactly one row, id = 1; `account_id` NULL when none is;
-- `updated_at` when that last changed. The key is checked at COMMIT: an added account
-- becomes active before its row is stored.
CREATE TABLE active_account (
  id integer PRIMARY KEY CHECK (id = 1),
  account_id bigint REFERENCES accounts (id) DEFERRABLE INITIALLY DEFERRED,
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
);

-- The 1.x session becomes account 1, active, with its login state and the cursor of its
-- newest change; a session that never had a username becomes an empty roster.
INSERT INTO session_writer (id, write_token, head, last_account_id)
SELECT 1, write_token, head, CASE WHEN username IS NULL THEN 0 ELSE 1 END FROM ONLY session WHERE id = 1;

INSERT INTO accounts (id, username, is_logged_in, updated_at, seq)
SELECT 1, username, is_logged_in, updated_at, head FROM ONLY session WHERE id = 1 AND username IS NOT NULL;

INSERT INTO active_account (id, account_id, updated_at)
SELECT 1, CASE WHEN username IS NULL THEN NULL ELSE 1 END, updated_at FROM ONLY session WHERE id = 1;

-- Every feed row names its account and whether that account was and is the active one. A
-- 1.x row concerns the one session, active whenever it had a username.
ALTER TABLE session_changes
  ADD COLUMN account_id bigint NOT NULL DEFAULT 1,
  ADD COLUMN was_active boolean NOT NULL DEFAULT false,
  ADD COLUMN is_active boolean NOT NULL DEFAULT false;
ALTER TABLE session_changes DISABLE TRIGGER session_changes_guard;
UPDATE ONLY session_changes SET was_active = old_username IS NOT NULL, is_active = new_username IS NOT NULL;
ALTER TABLE session_changes ENABLE TRIGGER session_changes_guard;
CREATE INDEX session_changes_account ON session_changes (account_id, seq);
ALTER TABLE session_changes
  ALTER COLUMN account_id DROP DEFAULT,
  ALTER COLUMN was_active DROP DEFAULT,
  ALTER COLUMN is_active DROP DEFAULT;

DROP TABLE session;

-- The active account's columns are read by subqueries, not an outer join, so that the 1.x
-- habit `SELECT … FROM session FOR UPDATE` still works and still holds what writers wait
-- for (the active_account and session_writer rows).
CREATE VIEW session AS
SELECT 1 AS id,
  (SELECT a.username FROM ONLY accounts a WHERE a.id = p.account_id) AS username,
  coalesce((SELECT a.is_logged_in FROM ONLY accounts a WHERE a.id = p.account_id), false) AS is_logged_in,
  coalesce((SELECT a.updated_at FROM ONLY accounts a WHERE a.id = p.account_id), p.updated_at) AS updated_at,
  w.head
FROM ONLY active_account p CROSS JOIN ONLY session_writer w
WHERE p.id = 1 AND w.id = 1;

CREATE OR REPLACE FUNCTION session_refuse() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_TABLE_NAME = 'session' THEN
    RAISE EXCEPTION 'session shows the active account: INSERT INTO accounts to add one, DELETE FROM accounts to remove one';
  ELSIF TG_TABLE_NAME = 'accounts' THEN
    RAISE EXCEPTION 'accounts cannot be truncated, which records no change; DELETE FROM accounts instead';
  ELSIF TG_OP = 'INSERT' THEN
    RAISE EXCEPTION 'the % table holds exactly one row; UPDATE it instead', TG_TABLE_NAME;
  ELSIF TG_TABLE_NAME = 'active_account' THEN
    RAISE EXCEPTION 'the active_account row cannot be deleted; set account_id to NULL for none';
  END IF;
  RAISE EXCEPTION 'the % row cannot be deleted', TG_TABLE_NAME;
END
$$;

-- The only writer of feed rows: inserts session_writer.entry at head + 1 (see above).
CREATE OR REPLACE FUNCTION session_feed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  recorded jsonb := NEW.entry;
BEGIN
  IF TG_RELID IS DISTINCT FROM to_regclass('session_writer') THEN
    RAISE EXCEPTION 'session_feed (search path %) fired for %.%, which is not the session_writer table of its schema: the schema was renamed (rename it back), or the function was attached to another table; nothing was written',
      current_setting('search_path'), TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'SS001';
  END IF;
  IF NEW.head IS DISTINCT FROM OLD.head THEN
    RAISE EXCEPTION 'session_writer.head is kept by the store: it is the newest cursor handed out, and only a recorded change moves it';
  END IF;
  NEW.entry := NULL;
  IF recorded IS NOT NULL AND pg_trigger_depth() < 2 THEN
    RAISE EXCEPTION 'session_writer.entry is set by the store''s triggers only; edit accounts or active_account instead';
  END IF;
  IF NEW.last_account_id IS DISTINCT FROM OLD.last_account_id AND NOT (
    NEW.last_account_id = OLD.last_account_id + 1 AND (recorded->>'account')::bigint = NEW.last_account_id
    AND recorded->>'old_username' IS NULL)
  THEN
    RAISE EXCEPTION 'session_writer.last_account_id is kept by the store: it numbers accounts, and no number is given twice';
  END IF;
  IF recorded IS NULL THEN
    RETURN NEW;
  END IF;
  IF OLD.head = 9223372036854775807 THEN
    RAISE EXCEPTION 'the feed''s cursor reached the largest integer (%); no change can follow', OLD.head
      USING ERRCODE = 'numeric_value_out_of_range';
  END IF;
  NEW.head := OLD.head + 1;
  INSERT INTO session_changes (
    seq, at, origin, account_id, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at,
    was_active, is_active
  ) VALUES (
    NEW.head, (recorded->>'at')::timestamptz, coalesce(OLD.origin, 'external'), (recorded->>'account')::bigint,
    recorded->>'old_username', recorded->>'new_username', (recorded->>'old_is_logged_in')::boolean,
    (recorded->>'new_is_logged_in')::boolean, (recorded->>'old_updated_at')::timestamptz,
    (recorded->>'was_active')::boolean, (recorded->>'is_active')::boolean
  );
  -- Channels are database-wide: one per schema. The payload is a hint; the log is the truth.
  PERFORM pg_notify('session_changes_' || TG_TABLE_SCHEMA, NEW.head::text);
  RETURN NEW;
END
$$;

-- Each change of an account row or of the active pointer: checked against the model, then
-- recorded through session_writer.entry (see above).
CREATE FUNCTION roster_feed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  now_ms timestamptz := date_trunc('milliseconds', clock_timestamp());
  writer record;
  newest record;
  target record;
  pointer bigint;
  old_name text;
  old_in boolean := false;
  old_at timestamptz := now_ms;
  was_on boolean := false;
  is_on boolean;
BEGIN
  IF TG_RELID IS DISTINCT FROM to_regclass('accounts') AND TG_RELID IS DISTINCT FROM to_regclass('active_account') THEN
    RAISE EXCEPTION 'roster_feed (search path %) fired for %.%, which is not the accounts or active_account table of its schema: the schema was renamed (rename it back), or the function was attached to another table; nothing was written',
      current_setting('search_path'), TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'SS001';
  END IF;

  IF TG_TABLE_NAME = 'active_account' THEN
    IF NEW.account_id IS NOT DISTINCT FROM OLD.account_id THEN
      IF NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        RAISE EXCEPTION 'active_account.updated_at is kept by the store: it is when the active account last changed';
      END IF;
      RETURN NEW;
    END IF;
    SELECT w.* INTO writer FROM ONLY session_writer w WHERE w.id = 1 FOR UPDATE;
    SELECT c.* INTO newest FROM ONLY session_changes c WHERE c.seq = writer.head;
    -- The move recorded with the account's own change, just before (an account added or
    -- signed in as the active one, the active account removed).
    IF newest.seq IS NOT NULL AND (
      (newest.account_id = NEW.account_id AND newest.is_active AND NOT newest.was_active)
      OR (NEW.account_id IS NULL AND newest.account_id = OLD.account_id AND newest.was_active AND NOT newest.is_active))
    THEN
      NEW.updated_at := newest.at;
      RETURN NEW;
    END IF;
    IF NEW.account_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ONLY accounts a WHERE a.id = NEW.account_id) THEN
      RAISE EXCEPTION 'active_account.account_id must be the id of an account, or NULL for none; no account has id %',
        NEW.account_id
        USING ERRCODE = 'foreign_key_violation';
    END IF;
    SELECT a.* INTO target FROM ONLY accounts a WHERE a.id = coalesce(NEW.account_id, OLD.account_id);
    UPDATE ONLY session_writer SET entry = jsonb_build_object(
      'at', now_ms, 'account', target.id, 'old_username', target.username, 'new_username', target.username,
      'old_is_logged_in', target.is_logged_in, 'new_is_logged_in', target.is_logged_in,
      'old_updated_at', target.updated_at, 'was_active', target.id IS NOT DISTINCT FROM OLD.account_id,
      'is_active', target.id IS NOT DISTINCT FROM NEW.account_id)
    WHERE id = 1;
    UPDATE ONLY accounts SET seq = writer.head + 1, updated_at = now_ms WHERE id = target.id;
    NEW.updated_at := now_ms;
    RETURN NEW;
  END IF;

  IF TG_OP = 'UPDATE' THEN
    IF NEW.id IS DISTINCT FROM OLD.id THEN
      RAISE EXCEPTION 'an account''s id never changes (% to %); add a new account instead', OLD.id, NEW.id
        USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.username IS NOT DISTINCT FROM OLD.username AND NEW.is_logged_in IS NOT DISTINCT FROM OLD.is_logged_in THEN
      IF NEW.seq IS NOT DISTINCT FROM OLD.seq AND NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        RETURN NEW;
      END IF;
      -- The stamp of a change of the pointer, recorded just before for this account.
      SELECT c.* INTO newest FROM ONLY session_changes c
      WHERE c.seq = (SELECT w.head FROM ONLY session_writer w WHERE w.id = 1);
      IF newest.seq IS NOT NULL AND newest.account_id = NEW.id AND NEW.seq = newest.seq AND NEW.updated_at = newest.at THEN
        RETURN NEW;
      END IF;
      RAISE EXCEPTION 'accounts.seq and accounts.updated_at are kept by the store: the cursor and time of the account''s newest change';
    END IF;
  END IF;

  SELECT w.* INTO writer FROM ONLY session_writer w WHERE w.id = 1 FOR UPDATE;
  SELECT p.account_id INTO pointer FROM ONLY active_account p WHERE p.id = 1;

  IF TG_OP = 'DELETE' THEN
    was_on := OLD.id IS NOT DISTINCT FROM pointer;
    UPDATE ONLY session_writer SET activates = false, entry = jsonb_build_object(
      'at', now_ms, 'account', OLD.id, 'old_username', OLD.username, 'new_username', NULL::text,
      'old_is_logged_in', OLD.is_logged_in, 'new_is_logged_in', false, 'old_updated_at', OLD.updated_at,
      'was_active', was_on, 'is_active', false)
    WHERE id = 1;
    IF was_on THEN
      UPDATE ONLY active_account SET account_id = NULL, updated_at = now_ms WHERE id = 1;
    END IF;
    RETURN OLD;
  END IF;

  IF NEW.username IS NULL OR NEW.is_logged_in IS NULL THEN
    RAISE EXCEPTION 'an account has a username and is_logged_in true or false; DELETE FROM accounts to remove one'
      USING ERRCODE = 'not_null_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM ONLY accounts a WHERE a.username = NEW.username AND a.id IS DISTINCT FROM NEW.id) THEN
    RAISE EXCEPTION 'another account is named %: usernames are unique in the store', quote_literal(NEW.username)
      USING ERRCODE = 'unique_violation';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW.id IS NOT NULL THEN
      RAISE EXCEPTION 'the store numbers accounts, and never gives a number twice: leave id out'
        USING ERRCODE = 'check_violation';
    END IF;
    IF (SELECT count(*) FROM ONLY accounts) >= 1000 THEN
      RAISE EXCEPTION 'the roster holds 1000 accounts, its limit; delete one first'
        USING ERRCODE = 'check_violation';
    END IF;
    NEW.id := writer.last_account_id + 1;
  ELSE
    old_name := OLD.username;
    old_in := OLD.is_logged_in;
    old_at := OLD.updated_at;
    was_on := NEW.id IS NOT DISTINCT FROM pointer;
  END IF;
  is_on := was_on OR writer.activates;
  NEW.seq := writer.head + 1;
  NEW.updated_at := now_ms;
  UPDATE ONLY session_writer SET activates = false, last_account_id = greatest(last_account_id, NEW.id),
    entry = jsonb_build_object(
      'at', now_ms, 'account', NEW.id, 'old_username', old_name, 'new_username', NEW.username,
      'old_is_logged_in', old_in, 'new_is_logged_in', NEW.is_logged_in, 'old_updated_at', old_at,
      'was_active', was_on, 'is_active', is_on)
  WHERE id = 1;
  IF is_on AND NOT was_on THEN
    UPDATE ONLY active_account SET account_id = NEW.id, updated_at = now_ms WHERE id = 1;
  END IF;
  RETURN NEW;
END
$$;

-- Before any row of accounts or active_account is locked, every statement on them takes the
-- session_writer row's lock, which library writes take first too: one order of locks for
-- every writer, so a psql edit and a library write never deadlock (the row trigger would
-- otherwise take the session_writer lock while holding the row's).
CREATE FUNCTION roster_lock() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_RELID IS DISTINCT FROM to_regclass('accounts') AND TG_RELID IS DISTINCT FROM to_regclass('active_account') THEN
    RAISE EXCEPTION 'roster_lock (search path %) fired for %.%, which is not the accounts or active_account table of its schema: the schema was renamed (rename it back), or the function was attached to another table; nothing was written',
      current_setting('search_path'), TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'SS001';
  END IF;
  PERFORM 1 FROM ONLY session_writer w WHERE w.id = 1 FOR UPDATE;
  RETURN NULL;
END
$$;

-- `UPDATE session SET username = …, is_logged_in = …` changes the active account (recorded
-- as any edit of accounts); with no active account, a username adds that account, active,
-- as one entry (as the SQLite view does), and an UPDATE without one is refused.
CREATE FUNCTION session_update() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  active bigint;
BEGIN
  IF TG_RELID IS DISTINCT FROM to_regclass('session') THEN
    RAISE EXCEPTION 'session_update (search path %) fired for %.%, which is not the session view of its schema: the schema was renamed (rename it back), or the function was attached to another view; nothing was written',
      current_setting('search_path'), TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'SS001';
  END IF;
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.head IS DISTINCT FROM OLD.head
    OR NEW.updated_at IS DISTINCT FROM OLD.updated_at
  THEN
    RAISE EXCEPTION 'only username and is_logged_in of session can be set (the active account''s); the store keeps id, updated_at and head';
  END IF;
  IF NEW.username IS NOT DISTINCT FROM OLD.username AND NEW.is_logged_in IS NOT DISTINCT FROM OLD.is_logged_in THEN
    RETURN NEW;
  END IF;
  SELECT p.account_id INTO active FROM ONLY active_account p WHERE p.id = 1;
  IF active IS NULL THEN
    IF NEW.username IS NULL THEN
      RAISE EXCEPTION 'no account is active: set a username too, and an account of that name joins, active';
    END IF;
    -- As the SQLite view: the name joins the roster, active, as one entry.
    UPDATE ONLY session_writer SET activates = true WHERE id = 1;
    INSERT INTO accounts (username, is_logged_in) VALUES (NEW.username, coalesce(NEW.is_logged_in, false));
    RETURN NEW;
  END IF;
  UPDATE ONLY accounts SET username = NEW.username, is_logged_in = NEW.is_logged_in WHERE id = active;
  RETURN NEW;
END
$$;

-- 0003's guard of the feed, reading the head from session_writer, and refusing a change
-- while any table of the store is UNLOGGED. At COMMIT it also asks the roster: the newest
-- entry of an account says what the account is (its username and login state, its cursor,
-- or that it is gone), and the newest entry of all whether it is the active one. A row that
-- no change of the roster made (a trigger of another table that sets session_writer.entry
-- itself) is refused with the transaction.
CREATE OR REPLACE FUNCTION session_changes_guard() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  current_head bigint;
  unlogged text;
  account record;
  pointer bigint;
BEGIN
  SELECT s.head, (SELECT string_agg(c.relname, ' and ') FROM pg_class c
                  WHERE c.oid IN (s.tableoid, TG_RELID, to_regclass('accounts'), to_regclass('active_account'))
                    AND c.relpersistence <> 'p')
    INTO current_head, unlogged
    FROM ONLY session_writer s WHERE s.id = 1;
  IF unlogged IS NOT NULL THEN
    RAISE EXCEPTION 'UNLOGGED table(s) of the store: %; the server empties them after a crash, so this change would be lost. Nothing was written; make each crash-safe with ALTER TABLE … SET LOGGED',
      unlogged
      USING ERRCODE = 'SS001';
  END IF;
  IF TG_WHEN = 'AFTER' THEN
    IF current_head IS NULL OR NEW.seq > current_head THEN
      RAISE EXCEPTION 'feed row % is above the head (%) at the end of its transaction: it was not written by the session_feed trigger, or SET CONSTRAINTS … IMMEDIATE checked it before the head moved; nothing was written',
        NEW.seq, current_head
        USING ERRCODE = 'SS001';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ONLY session_changes c WHERE c.account_id = NEW.account_id AND c.seq > NEW.seq) THEN
      SELECT a.* INTO account FROM ONLY accounts a WHERE a.id = NEW.account_id;
      SELECT p.account_id INTO pointer FROM ONLY active_account p WHERE p.id = 1;
      IF (account.id IS NULL) <> (NEW.new_username IS NULL)
        OR (account.id IS NOT NULL AND (account.username IS DISTINCT FROM NEW.new_username
          OR account.is_logged_in IS DISTINCT FROM NEW.new_is_logged_in OR account.seq IS DISTINCT FROM NEW.seq))
        OR (NEW.seq = current_head AND NEW.is_active IS DISTINCT FROM (pointer IS NOT DISTINCT FROM NEW.account_id))
      THEN
        RAISE EXCEPTION 'feed row % is not the change of account % that the roster holds at the end of its transaction: it was not recorded by the store''s triggers; nothing was written',
          NEW.seq, NEW.account_id
          USING ERRCODE = 'SS001';
      END IF;
    END IF;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' AND pg_trigger_depth() > 1 AND NEW.seq = current_head + 1 THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'session_changes rows are written by the session_feed trigger only; edit accounts or active_account instead';
END
$$;

CREATE TRIGGER accounts_feed BEFORE INSERT OR UPDATE OR DELETE ON accounts
FOR EACH ROW EXECUTE FUNCTION roster_feed();

CREATE TRIGGER accounts_lock BEFORE INSERT OR UPDATE OR DELETE ON accounts
FOR EACH STATEMENT EXECUTE FUNCTION roster_lock();

CREATE TRIGGER active_account_lock BEFORE UPDATE ON active_account
FOR EACH STATEMENT EXECUTE FUNCTION roster_lock();

CREATE TRIGGER accounts_refuse_truncate BEFORE TRUNCATE ON accounts
FOR EACH STATEMENT EXECUTE FUNCTION session_refuse();

CREATE TRIGGER active_account_feed BEFORE UPDATE ON active_account
FOR EACH ROW EXECUTE FUNCTION roster_feed();

CREATE TRIGGER active_account_refuse BEFORE INSERT OR DELETE ON active_account
FOR EACH ROW EXECUTE FUNCTION session_refuse();

CREATE TRIGGER active_account_refuse_truncate BEFORE TRUNCATE ON active_account
FOR EACH STATEMENT EXECUTE FUNCTION session_refuse();

CREATE TRIGGER session_feed BEFORE UPDATE ON session_writer
FOR EACH ROW EXECUTE FUNCTION session_feed();

CREATE TRIGGER session_writer_refuse BEFORE INSERT OR DELETE ON session_writer
FOR EACH ROW EXECUTE FUNCTION session_refuse();

CREATE TRIGGER session_writer_refuse_truncate BEFORE TRUNCATE ON session_writer
FOR EACH STATEMENT EXECUTE FUNCTION session_refuse();

CREATE TRIGGER session_update INSTEAD OF UPDATE ON session
FOR EACH ROW EXECUTE FUNCTION session_update();

CREATE TRIGGER session_refuse INSTEAD OF INSERT OR DELETE ON session
FOR EACH ROW EXECUTE FUNCTION session_refuse();

REVOKE ALL ON FUNCTION session_refuse(), session_feed(), roster_feed(), roster_lock(), session_update(),
  session_changes_guard()
FROM PUBLIC;
