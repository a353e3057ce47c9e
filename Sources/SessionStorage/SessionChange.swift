import FeedKit

/// One committed change of the session: the states before and after, and what it means.
/// Its feed entry (``SessionEntry``) adds the cursor, time and origin.
public struct SessionChange: Sendable, Equatable, Hashable {
  /// The state before the change.
  public let before: SessionState
  /// The state after the change.
  public let after: SessionState
  /// The typed events derived from ``before`` and ``after``.
  public let events: [SessionEvent]

  /// Creates a change, deriving its events.
  public init(before: SessionState, after: SessionState) {
    self.before = before
    self.after = after
    self.events = SessionEvent.between(before, after)
  }
}

/// A session change in the feed: `entry.cursor`, `entry.time`, `entry.origin`, and the
/// change's members directly (`entry.before`, `entry.after`, `entry.events`).
public typealias SessionEntry = FeedEntry<SessionChange>

/// Every session change after a cursor, as an `AsyncSequence`.
public typealias SessionChanges = FeedSubscription<SessionChange, SessionState>

/// The state now and each new state, for view models.
public typealias SessionValues = FeedValues<SessionChange, SessionState>

/// The state, its cursor, and every change after it.
public typealias SessionSnapshotFeed = SnapshotFeed<SessionChange, SessionState>
