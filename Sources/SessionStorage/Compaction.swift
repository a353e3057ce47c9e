import FeedKit
internal import SystemKit

/// What a compaction did, whichever store made it, so that code written against one store
/// reads another's alike.
public struct CompactionResult: Sendable, Equatable {
  /// How many entries were deleted.
  public var removed: Int
  /// The bounds afterwards. The head never moves back: cursors are never reused.
  public var bounds: FeedBounds

  /// A compaction's result, as every store makes it.
  package init(removed: Int, bounds: FeedBounds) {
    self.removed = removed
    self.bounds = bounds
  }
}

/// Which of the oldest entries a compaction deletes, validated by the shared compaction
/// methods before a backend sees it.
package enum Deletion: Sendable {
  /// All but the newest `count` (at least 0).
  case keepingLast(Int)
  /// Every entry older than the cursor (at most the next cursor).
  case before(Cursor)
  /// Every entry up to the first one younger than the age (0 to `Retention.maximumAge`).
  case olderThan(Duration)
}

extension _SessionBackedStore {
  /// Deletes all but the newest `count` entries; cursors are never reused.
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `invalidArgument` for a negative count; `readOnly` for a read-only store.
  @discardableResult
  public func compact(keepingLast count: Int) throws -> CompactionResult {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    return try _core.backend.delete(.keepingLast(count))
  }

  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept).
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `cursorAhead(requested:head:)` for a cursor beyond the one the next change
  ///   would get; `readOnly` for a read-only store.
  @discardableResult
  public func compact(before cursor: Cursor) throws -> CompactionResult {
    try bounds().requireCompactable(before: cursor)
    return try _core.backend.delete(.before(cursor))
  }

  /// Deletes the oldest entries up to the first one younger than `age`, by the time each
  /// was recorded: a clock stepped back keeps entries rather than leave a hole.
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `invalidArgument` for a negative age or one above `Retention.maximumAge`
  ///   (SQLite's date functions cannot count back that far); nothing is deleted.
  @discardableResult
  public func compact(olderThan age: Duration) throws -> CompactionResult {
    try SessionStorageError.requireAge(age, "the age")
    return try _core.backend.delete(.olderThan(age))
  }
}

extension FeedBounds {
  /// Throws `cursorAhead` for a compaction before a cursor beyond the one the next change
  /// would get: nothing there was ever handed out.
  package func requireCompactable(before cursor: Cursor) throws {
    if let next = head.next, cursor > next { throw FeedError.cursorAhead(requested: cursor, head: head) }
  }
}

extension SessionStore {
  /// The DELETE of each compaction, in an IMMEDIATE transaction.
  package func delete(_ deletion: Deletion) throws -> CompactionResult {
    switch deletion {
    case .keepingLast(let count):
      try maintain(
        "DELETE FROM session_changes WHERE seq <= "
          + "(SELECT seq FROM session_changes ORDER BY seq DESC LIMIT 1 OFFSET ?)",
        [.integer(Int64(count))])
    case .before(let cursor):
      try maintain("DELETE FROM session_changes WHERE seq < ?", [.integer(cursor.value)])
    case .olderThan(let age):
      try maintain(Self.olderThanSQL, [.integer(age.milliseconds)])
    }
  }

  /// Deletes the oldest entries before the first one at most `?` milliseconds old; all of
  /// them when none is. None when SQLite cannot compute the cutoff (it is NULL for an age
  /// that reaches before its dates): an age the callers refuse must not delete everything
  /// if one got through.
  static let olderThanSQL = """
    DELETE FROM session_changes WHERE seq <= coalesce(
      (SELECT seq FROM session_changes
       WHERE at >= strftime('%Y-%m-%dT%H:%M:%fZ', julianday('now') - ?1 / 86400000.0)
       ORDER BY seq LIMIT 1) - 1,
      (SELECT max(seq) FROM session_changes
       WHERE strftime('%Y-%m-%dT%H:%M:%fZ', julianday('now') - ?1 / 86400000.0) IS NOT NULL))
    """

  /// Runs a maintenance DELETE on the feed in an IMMEDIATE transaction.
  func maintain(_ sql: String, _ bindings: [SQLiteValue]) throws -> CompactionResult {
    try maintain(deleting: [(sql, bindings)])
  }

  /// Runs `first` (if any), then maintenance DELETEs on the feed, in one IMMEDIATE
  /// transaction; the compaction counts the rows the DELETEs removed.
  func maintain(first: (String, [SQLiteValue])? = nil, deleting deletes: [(String, [SQLiteValue])]) throws
    -> CompactionResult
  {
    try requireWritable()
    return try database.withWriter(options) { connection in
      try Migrator.verifiedWrite(connection) {
        if let (sql, bindings) = first { try connection.run(sql, bindings) }
        var removed = 0
        for (sql, bindings) in deletes {
          try connection.run(sql, bindings)
          removed += connection.changes
        }
        return CompactionResult(removed: removed, bounds: try SessionTables.bounds(on: connection))
      }
    }
  }
}
