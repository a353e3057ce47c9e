/// The feed-facing half of the repository contract, written once for both stores:
/// ``SessionStore`` and ``InMemorySessionStore`` differ in where their log lives, not in how
/// it is read, so their reads, subscriptions and compaction checks forward here.
extension Feed where Change == SessionChange, Snapshot == SessionState {
  /// The state and its cursor, read atomically.
  package func snapshot() throws -> SessionSnapshot {
    let (state, cursor) = try source.snapshot()
    return SessionSnapshot(state: state, cursor: cursor)
  }

  /// The state now, then each new state.
  package func values() -> SessionValues { values(\.change.after) }

  /// A page of history; a negative limit is `invalidArgument`.
  package func checkedHistory(from start: FeedStart, limit: Int) throws -> [SessionEntry] {
    try SessionStorageError.requireNonNegative(limit, "the history limit")
    return try history(from: start, limit: limit)
  }
}

extension FeedBounds {
  /// Throws `cursorAhead` for a compaction before a cursor beyond the one the next change
  /// would get: nothing there was ever handed out.
  package func requireCompactable(before cursor: Cursor) throws {
    if let next = head.next, cursor > next { throw FeedError.cursorAhead(requested: cursor, head: head) }
  }
}
