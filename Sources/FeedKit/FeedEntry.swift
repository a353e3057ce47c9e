import Foundation

/// One committed change: where it sits in the feed, when and by whom it was made, and the
/// typed change. Members of the change can be read on the entry directly (`entry.after`).
@dynamicMemberLookup
public struct FeedEntry<Change: Sendable>: Sendable {
  /// The entry's position; resume after it with ``FeedStart/after(_:)``.
  public let cursor: Cursor
  /// When the change committed.
  public let time: Date
  /// Who made the change: a library writer's name, or `external` for any other client.
  public let origin: String
  /// What changed.
  public let change: Change

  /// Creates an entry; sources create these.
  public init(cursor: Cursor, time: Date, origin: String, change: Change) {
    self.cursor = cursor
    self.time = time
    self.origin = origin
    self.change = change
  }

  /// A member of the change, e.g. `entry.after` for `entry.change.after`.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Change, Value>) -> Value { change[keyPath: keyPath] }
}

extension FeedEntry: Equatable where Change: Equatable {}
