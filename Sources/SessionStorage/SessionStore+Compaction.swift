import FeedKit

extension SessionStore {
  /// What a compaction did: the result of both stores' compactions (``SessionStore`` and
  /// ``InMemorySessionStore``), so that code written against one reads the other's alike.
  public struct Compaction: Sendable, Equatable {
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

  /// Deletes all but the newest `count` entries.
  @discardableResult
  public func compact(keepingLast count: Int) throws -> Compaction {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    return try maintain(
      "DELETE FROM session_changes WHERE seq <= (SELECT seq FROM session_changes ORDER BY seq DESC LIMIT 1 OFFSET ?)",
      [.integer(Int64(count))])
  }

  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept).
  /// - Throws: `cursorAhead(requested:head:)` for a cursor beyond the log.
  @discardableResult
  public func compact(before cursor: Cursor) throws -> Compaction {
    try bounds().requireCompactable(before: cursor)
    return try maintain("DELETE FROM session_changes WHERE seq < ?", [.integer(cursor.value)])
  }
}
