-- The feed's guard recognises session_feed's INSERT by what the INSERT does to the store,
-- not by who it says it is: it reads no message text (the call stack of 0002 is worded in
-- the server's lc_messages) and trusts no function's name, no setting and no trigger depth
-- on their own.
--
-- Run with search_path set to '<schema>, pg_temp', as 0002 (the functions keep that path).
--
-- A feed row is the change that moves the session's head to its seq, and only session_feed
-- moves the head (it sets NEW.head itself on every UPDATE and inserts the row at that
-- number). So the guard asks two things, both about the store's own rows:
--   * At the INSERT (BEFORE INSERT): the row is inserted from within a trigger, at the
--     number just above the head as it stands (`seq = head + 1`). session_feed inserts
--     before its UPDATE lands, so its row is exactly there; a row at or below the head (a
--     cursor handed out or compacted) is refused at once.
--   * At COMMIT (a constraint trigger deferred to the end of the transaction): the head
--     reached the row (`seq <= head`). Only session_feed moves the head, and it inserts its
--     own row at each number it moves to: a row anyone else inserted above the head either
--     stays above it (refused here) or collides with session_feed's row (refused by the
--     primary key). Either way the transaction rolls back and nothing is written. The
--     refusal carries SQLSTATE SS001, as session_feed's own: the library reports a schema
--     changed by hand.
-- A trigger of another table, a look-alike session_feed of another schema (whatever its
-- search path and its name in a message), an INSERT typed in psql: none of them moves the
-- head, so none of their rows survives its transaction. Rows of a table that inherits from
-- session_changes pass no trigger of it; the library reads the feed with ONLY, and opens
-- and check refuse such a table.
--
-- Every change is refused while the session table or the feed is UNLOGGED (ALTER TABLE …
-- SET UNLOGGED): the server empties such a table after a crash or an immediate shutdown, so
-- an acknowledged change would be lost with the session row.
--
-- The guard runs as the schema's owner (SECURITY DEFINER): the deferred check reads the
-- session row at COMMIT, under the role of whoever commits. `SET CONSTRAINTS … IMMEDIATE`
-- moves that check to the end of session_feed's own INSERT, before the head moved: the
-- change is then refused, saying so.

CREATE OR REPLACE FUNCTION session_changes_guard() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
  current_head bigint;
  unlogged text;
BEGIN
  SELECT s.head, (SELECT string_agg(c.relname, ' and ') FROM pg_class c
                  WHERE c.oid IN (s.tableoid, TG_RELID) AND c.relpersistence <> 'p')
    INTO current_head, unlogged
    FROM ONLY session s WHERE s.id = 1;
  IF unlogged IS NOT NULL THEN
    RAISE EXCEPTION 'UNLOGGED table(s) of the store: %; the server empties them after a crash, so this change would be lost. Nothing was written; make each crash-safe with ALTER TABLE … SET LOGGED',
      unlogged
      USING ERRCODE = 'SS001';
  END IF;
  IF TG_WHEN = 'AFTER' THEN
    IF current_head IS NULL OR NEW.seq > current_head THEN
      RAISE EXCEPTION 'feed row % is above the session''s head (%) at the end of its transaction: it was not written by the session_feed trigger, or SET CONSTRAINTS … IMMEDIATE checked it before the head moved; nothing was written',
        NEW.seq, current_head
        USING ERRCODE = 'SS001';
    END IF;
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' AND pg_trigger_depth() > 1 AND NEW.seq = current_head + 1 THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'session_changes rows are written by the session_feed trigger only; UPDATE session instead';
END
$$;

CREATE CONSTRAINT TRIGGER session_changes_settled AFTER INSERT ON session_changes
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION session_changes_guard();

REVOKE ALL ON FUNCTION session_changes_guard() FROM PUBLIC;
