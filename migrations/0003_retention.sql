-- The retention policy: one row, id = 1, shared by sessionctl and every app using the file.
-- NULL means no limit. An entry is deleted once either limit says so: it is not among the
-- newest `keep_last`, or it is older than `max_age_ms` milliseconds. At least one entry and
-- at least one second are kept, so the entry a write just made is never deleted with it.
CREATE TABLE session_retention (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  keep_last INTEGER CHECK (keep_last IS NULL OR (typeof(keep_last) = 'integer' AND keep_last >= 1)),
  max_age_ms INTEGER CHECK (max_age_ms IS NULL OR (typeof(max_age_ms) = 'integer' AND max_age_ms >= 1000))
);

INSERT INTO session_retention (id) VALUES (1);

CREATE TRIGGER session_retention_refuse_delete BEFORE DELETE ON session_retention
BEGIN
  SELECT RAISE(ABORT, 'the session_retention row cannot be deleted; set keep_last and max_age_ms to NULL instead');
END;

CREATE TRIGGER session_retention_refuse_insert BEFORE INSERT ON session_retention
BEGIN
  SELECT RAISE(ABORT, 'the session_retention table holds exactly one row; UPDATE it instead');
END;

-- Every new feed row applies the policy in the same transaction, whoever wrote it. Both
-- DELETEs walk the feed from its oldest row by seq (the primary key) and stop at the first
-- row kept, so a write costs what it deletes, not a scan: the count bound is a range below
-- the newest cursor; the age bound deletes the oldest rows up to the first one young enough
-- (a clock stepped back keeps rows rather than leave a hole in the cursors). A limit that is
-- NULL stops each DELETE at once: `seq <= NULL` selects nothing, and the cutoff '' is met by
-- the oldest row.
CREATE TRIGGER session_retention_apply AFTER INSERT ON session_changes
WHEN (SELECT keep_last IS NOT NULL OR max_age_ms IS NOT NULL FROM session_retention WHERE id = 1)
BEGIN
  DELETE FROM session_changes
  WHERE seq <= (SELECT max(seq) FROM session_changes) - (SELECT keep_last FROM session_retention WHERE id = 1);
  DELETE FROM session_changes
  WHERE seq < (
    SELECT seq FROM session_changes
    WHERE at >= (
      SELECT coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', julianday('now') - max_age_ms / 86400000.0), '')
      FROM session_retention WHERE id = 1)
    ORDER BY seq LIMIT 1);
END;
