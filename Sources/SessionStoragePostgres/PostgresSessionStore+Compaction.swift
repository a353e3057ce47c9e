import FeedKit
import SessionStorage
internal import SystemKit

extension PostgresSessionStore {
  /// Deletes all but the newest `count` entries; cursors are never reused (the head stays
  /// in the session row).
  /// - Throws: `invalidArgument` for a negative count; `readOnly` for a read-only store.
  @discardableResult
  public func compact(keepingLast count: Int) throws -> SessionStore.Compaction {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    return try maintain(
      "DELETE FROM session_changes WHERE seq <= (SELECT seq FROM session_changes ORDER BY seq DESC LIMIT 1 OFFSET $1)",
      [String(count)])
  }

  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept).
  /// - Throws: `cursorAhead(requested:head:)` for a cursor beyond the log.
  @discardableResult
  public func compact(before cursor: Cursor) throws -> SessionStore.Compaction {
    try bounds().requireCompactable(before: cursor)
    return try maintain("DELETE FROM session_changes WHERE seq < $1", [String(cursor.value)])
  }

  /// Deletes the oldest entries up to the first one younger than `age` (by the time each
  /// was recorded; a clock stepped back keeps entries rather than leave a hole).
  /// - Throws: `invalidArgument` for a negative age or one above `Retention.maximumAge`.
  @discardableResult
  public func compact(olderThan age: Duration) throws -> SessionStore.Compaction {
    try SessionStorageError.requireAge(age, "the age")
    // Clamped to about 3,000 years: further back than that is before every entry, and
    // stays within timestamptz's range.
    let milliseconds = min(age.milliseconds, 100_000_000_000_000)
    return try maintain(
      """
      DELETE FROM session_changes WHERE seq <= coalesce(
        (SELECT seq FROM session_changes WHERE at >= clock_timestamp() - $1::bigint * interval '1 millisecond'
         ORDER BY seq LIMIT 1) - 1,
        (SELECT max(seq) FROM session_changes))
      """, [String(milliseconds)])
  }

  /// Runs a DELETE on the feed in a transaction and returns what it removed and the bounds
  /// afterwards.
  private func maintain(_ sql: String, _ values: [String?]) throws -> SessionStore.Compaction {
    try withWriter { connection in
      try connection.begin()
      do {
        let removed = try connection.query(sql, values).changed
        let bounds = try connection.query(PostgresTables.boundsSQL).rows.first.map(PostgresTables.bounds)
        try connection.execute("COMMIT")
        return SessionStore.Compaction(
          removed: removed, bounds: bounds ?? FeedBounds(oldest: nil, head: .zero))
      } catch {
        if !connection.isBroken { try? connection.execute("ROLLBACK") }
        throw error
      }
    }
  }
}
