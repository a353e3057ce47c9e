/// The oldest and newest cursors of a log.
public struct FeedBounds: Sendable, Equatable {
  /// The oldest entry still kept, or nil when none is.
  public var oldest: Cursor?
  /// The newest cursor ever handed out (``Cursor/zero`` for a log never written).
  public var head: Cursor

  /// Creates bounds.
  public init(oldest: Cursor?, head: Cursor) {
    self.oldest = oldest
    self.head = head
  }

  /// The first cursor a reader could still receive.
  public var firstAvailable: Cursor { oldest ?? head.next }
}

/// A log that a feed reads: entries in cursor order, read in pages.
public protocol FeedSource<Event, Snapshot>: Sendable {
  /// The typed event of each entry.
  associatedtype Event: Sendable
  /// The state a subscriber can start from.
  associatedtype Snapshot: Sendable

  /// Up to `limit` entries with cursors greater than `cursor`, oldest first.
  func entries(after cursor: Cursor, limit: Int) throws -> [FeedEntry<Event>]
  /// The oldest kept cursor and the newest cursor.
  func bounds() throws -> FeedBounds
  /// The current state and the cursor of the newest entry it includes, read atomically.
  func snapshot() throws -> (state: Snapshot, cursor: Cursor)
}
