import FeedKit

extension SQLiteFile {
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
