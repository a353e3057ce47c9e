-- The session store's schema on PostgreSQL: the same tables and columns as the SQLite file
-- (migrations/0001_session_and_feed.sql), with PostgreSQL's types, in the store's own schema.
-- The library runs this with search_path set to that schema only, so no name here is
-- qualified, and the checksum is the same for every schema.
--
-- GAPLESS CURSORS IN COMMIT ORDER
-- A sequence would not do: a rolled-back transaction burns its value (a hole readers wait
-- for, or skip), and values are taken at INSERT, not at COMMIT, so a reader of
-- `seq > cursor` could see 8 commit before 7 and never come back for 7. Instead the head
-- cursor lives in the session row (`head`) and the BEFORE UPDATE trigger below numbers each
-- change `OLD.head + 1`:
--   * The UPDATE takes the session row's lock and holds it to COMMIT or ROLLBACK. The next
--     writer's UPDATE waits for it, and under READ COMMITTED re-reads the newest committed
--     row version before its trigger runs, so its OLD.head is the committed head: no two
--     transactions take the same number. (Under REPEATABLE READ or SERIALIZABLE the second
--     writer fails with a serialization error and rolls back instead.)
--   * Cursor N + 1 is taken only after N committed (its writer waited for N's lock), so
--     cursors commit in their order: a reader that saw N + 1 can never later find N.
--   * A rollback rolls the head back with the feed row: the number is taken again by the
--     next change, so there is no hole.
--   * Compaction deletes feed rows, never the head: after the feed is emptied the next
--     change still gets head + 1, and no cursor is ever handed out twice.
--   * The trigger sets NEW.head itself on every UPDATE, so nobody can move it by hand.

-- The session: exactly one row, id = 1. `username` and `is_logged_in` are the public
-- contract that people type into psql.
CREATE TABLE session (
  id integer PRIMARY KEY CHECK (id = 1),
  username text,
  is_logged_in boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_by text NOT NULL DEFAULT 'external',
  -- Library writes set a fresh token; a change that leaves it alone came from elsewhere.
  write_token bigint NOT NULL DEFAULT 0,
  -- The newest cursor ever handed out; only the session_feed trigger moves it.
  head bigint NOT NULL DEFAULT 0
);

INSERT INTO session (id) VALUES (1);

-- The change-feed. `seq` is the cursor, numbered by the session_feed trigger (no sequence).
CREATE TABLE session_changes (
  seq bigint PRIMARY KEY,
  at timestamptz NOT NULL,
  origin text NOT NULL,
  old_username text,
  new_username text,
  old_is_logged_in boolean NOT NULL,
  new_is_logged_in boolean NOT NULL,
  old_updated_at timestamptz NOT NULL
);

CREATE FUNCTION session_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'the session row cannot be deleted; set is_logged_in = false to sign out';
  END IF;
  RAISE EXCEPTION 'the session table holds exactly one row; UPDATE it instead';
END
$$;

CREATE TRIGGER session_refuse BEFORE INSERT OR DELETE ON session
FOR EACH ROW EXECUTE FUNCTION session_refuse();

CREATE TRIGGER session_refuse_truncate BEFORE TRUNCATE ON session
FOR EACH STATEMENT EXECUTE FUNCTION session_refuse();

-- Every committed change of username or login state writes one feed row in the same
-- transaction, numbered head + 1 under the session row's lock (see above), and notifies
-- the schema's channel at commit; a no-op update writes none and keeps the head.
-- `SET search_path FROM CURRENT` pins the store's schema, so an UPDATE typed in psql with
-- another search_path writes this schema's feed.
CREATE FUNCTION session_feed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  now_ms timestamptz := date_trunc('milliseconds', clock_timestamp());
  who text;
BEGIN
  IF NEW.username IS NOT DISTINCT FROM OLD.username AND NEW.is_logged_in = OLD.is_logged_in THEN
    NEW.head := OLD.head;
    RETURN NEW;
  END IF;
  IF OLD.head = 9223372036854775807 THEN
    RAISE EXCEPTION 'the feed''s cursor reached the largest integer (%); no change can follow', OLD.head
      USING ERRCODE = 'numeric_value_out_of_range';
  END IF;
  who := CASE WHEN NEW.write_token = OLD.write_token THEN 'external' ELSE NEW.updated_by END;
  NEW.head := OLD.head + 1;
  NEW.updated_at := now_ms;
  NEW.updated_by := who;
  INSERT INTO session_changes (
    seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at
  ) VALUES (
    NEW.head, now_ms, who, OLD.username, NEW.username, OLD.is_logged_in, NEW.is_logged_in, OLD.updated_at
  );
  -- Channels are database-wide: one per schema. The payload is a hint; the log is the truth.
  PERFORM pg_notify('session_changes_' || TG_TABLE_SCHEMA, NEW.head::text);
  RETURN NEW;
END
$$;

CREATE TRIGGER session_feed BEFORE UPDATE ON session
FOR EACH ROW EXECUTE FUNCTION session_feed();

-- Feed rows come from session_feed only (one trigger deep); DELETE is compaction.
CREATE FUNCTION session_changes_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND pg_trigger_depth() > 1 THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'session_changes rows are written by the session_feed trigger only; UPDATE session instead';
END
$$;

CREATE TRIGGER session_changes_guard BEFORE INSERT OR UPDATE ON session_changes
FOR EACH ROW EXECUTE FUNCTION session_changes_guard();
