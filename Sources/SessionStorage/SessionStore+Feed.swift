import FeedKit

extension SessionStore {
  /// Every change after `start`, once, in commit order, as it commits (from this
  /// process, other processes and the sqlite3 shell).
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now) throws -> SessionChanges {
    try feed.changes(from: start)
  }

  /// The state and its cursor, read in one transaction, then every change after it.
  public func snapshotAndChanges() throws -> SessionSnapshotFeed {
    try feed.snapshotAndChanges()
  }

  /// The state now, then each new state; consecutive equal states are dropped.
  public func values() -> SessionValues { feed.values(\.event.after) }

  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try feed.page(from: start, limit: limit)
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() throws -> FeedBounds { try log.bounds() }
}
