extension SessionStore {
  /// A live subscription to every change after `start`, once, in commit order, as it
  /// commits (from this process, other processes and the sqlite3 shell).
  ///
  /// Iterating never ends by itself: run it in a `Task` and cancel the task (or drop the
  /// iterator) to stop.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try feed.changes(from: start)
  }

  /// The state and its cursor, read in one transaction, then a live subscription to every
  /// change after it: no gap, no duplicate.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription {
    try feed.snapshotAndChanges()
  }

  /// The state now, then each new state; consecutive equal states are dropped.
  public func values() -> SessionValues { feed.values() }

  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try feed.checkedHistory(from: start, limit: limit)
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() throws -> FeedBounds { try log.bounds() }
}
