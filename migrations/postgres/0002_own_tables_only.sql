-- The schema's functions reach exactly their own schema's tables, and only the store's own
-- trigger writes feed rows.
--
-- The library runs this with search_path set to '<schema>, pg_temp', and every function
-- keeps that path (SET search_path FROM CURRENT), so no name here is qualified and the
-- checksum is the same for every schema:
--   * pg_temp comes last: a temporary table or function of a psql session (a temporary
--     session_changes, say) never stands in for the store's own. (Unless it is named, pg_temp
--     is searched first, which is how 0001's session_feed could write into a temporary table.)
--   * The path names the schema, so after ALTER SCHEMA … RENAME it names a schema that is
--     gone, or another store's. session_feed therefore runs only for the session table its
--     path leads to: on any other table (a renamed schema's, or a table someone attached the
--     function to) it refuses with SQLSTATE SS001 and nothing is written. The library also
--     refuses to open a schema whose functions' path is not its own.
--   * session_feed runs as the schema's owner (SECURITY DEFINER), so a role that may update
--     the session needs no privilege on the feed, and nobody else can insert into it.
--   * session_changes_guard lets an INSERT into the feed through only when it is
--     session_feed's own INSERT, called by this schema's session_feed (read from the call
--     stack, GET DIAGNOSTICS PG_CONTEXT, which no client can set): a trigger of another table,
--     or a function of another schema, is refused however deep it runs.
-- The functions are executable by their owner only: triggers fire them for everyone.

CREATE OR REPLACE FUNCTION session_refuse() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' OR TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION 'the session row cannot be deleted; set is_logged_in = false to sign out';
  END IF;
  RAISE EXCEPTION 'the session table holds exactly one row; UPDATE it instead';
END
$$;

CREATE OR REPLACE FUNCTION session_feed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  now_ms timestamptz := date_trunc('milliseconds', clock_timestamp());
  who text;
BEGIN
  IF TG_RELID IS DISTINCT FROM to_regclass('session') THEN
    RAISE EXCEPTION 'session_feed (search path %) fired for %.%, which is not the session table of its schema: the schema was renamed (rename it back), or the function was attached to another table; nothing was written',
      current_setting('search_path'), TG_TABLE_SCHEMA, TG_TABLE_NAME
      USING ERRCODE = 'SS001';
  END IF;
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
  INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at) VALUES (NEW.head, now_ms, who, OLD.username, NEW.username, OLD.is_logged_in, NEW.is_logged_in, OLD.updated_at);
  -- Channels are database-wide: one per schema. The payload is a hint; the log is the truth.
  PERFORM pg_notify('session_changes_' || TG_TABLE_SCHEMA, NEW.head::text);
  RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION session_changes_guard() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  feed_insert constant text := '"INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at) VALUES (NEW.head, now_ms, who, OLD.username, NEW.username, OLD.is_logged_in, NEW.is_logged_in, OLD.updated_at)"';
  context text;
  stack text[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- stack[1] is this function, [2] the INSERT that fired it, [3] the function that ran
    -- that INSERT. Only session_feed's own INSERT (one line) ends [2] with its text in
    -- quotes, and a function is shown unqualified only when it is this schema's (the path
    -- above). The words around them follow lc_messages; these parts do not.
    GET DIAGNOSTICS context = PG_CONTEXT;
    stack := string_to_array(context, E'\n');
    IF right(stack[2], length(feed_insert)) = feed_insert AND stack[3] LIKE '% session\_feed() %' THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'session_changes rows are written by the session_feed trigger only; UPDATE session instead';
END
$$;

REVOKE ALL ON FUNCTION session_refuse(), session_feed(), session_changes_guard() FROM PUBLIC;
