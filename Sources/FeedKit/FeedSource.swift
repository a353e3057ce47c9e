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

  /// The first cursor a reader could still receive: the oldest kept, else the one after the
  /// head. When nothing is kept and the head is the largest cursor (`Int64.max`), no entry
  /// can come any more, and this is the head itself.
  public var firstAvailable: Cursor { oldest ?? head.next ?? head }

  /// Whether entries committed right after `cursor` are gone: `cursor` is behind the head
  /// and the entry after it is not kept.
  func isCompacted(after cursor: Cursor) -> Bool {
    guard cursor < head, let next = cursor.next else { return false }
    return oldest.map { $0 > next } ?? true
  }
}

/// A log that a feed reads: entries in cursor order, read in pages.
public protocol FeedSource<Change, Snapshot>: Sendable {
  /// The typed change of each entry.
  associatedtype Change: Sendable
  /// The state a subscriber can start from.
  associatedtype Snapshot: Sendable

  /// Up to `limit` entries with cursors greater than `cursor`, oldest first.
  func entries(after cursor: Cursor, limit: Int) throws -> [FeedEntry<Change>]
  /// The oldest kept cursor and the newest cursor.
  func bounds() throws -> FeedBounds
  /// The current state and the cursor of the newest entry it includes, read atomically.
  func snapshot() throws -> (state: Snapshot, cursor: Cursor)
  /// Whether `error`, thrown by a read of this source, is a fault that passes (a server
  /// that cannot be reached for now). A subscription that meets one does not end: it waits
  /// for the signal's next wake-up and reads again from its cursor, so a source that says
  /// yes must have a signal that keeps waking subscribers while the fault lasts (a poll).
  /// Every other error ends the subscription with a throw.
  func isTransient(_ error: any Error) -> Bool
  /// A number that moves whenever a read of this source could return something other than
  /// it returned before (a commit of any connection, a restore, a replaced file), or nil
  /// when the source cannot tell cheaply. Subscribers asking for the same page while it
  /// keeps one value share one read of it; with nil every subscriber reads its own.
  func readVersion() throws -> Int64?
}

extension FeedSource {
  /// No error passes: every read error ends a subscription.
  public func isTransient(_ error: any Error) -> Bool { false }

  /// No version: every subscriber reads its own pages.
  public func readVersion() throws -> Int64? { nil }
}
