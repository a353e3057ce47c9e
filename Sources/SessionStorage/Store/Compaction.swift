import FeedKit

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

extension FeedBounds {
  /// Throws `cursorAhead` for a compaction before a cursor beyond the one the next change
  /// would get: nothing there was ever handed out.
  func requireCompactable(before cursor: Cursor) throws {
    if let next = head.next, cursor > next { throw FeedError.cursorAhead(requested: cursor, head: head) }
  }
}
