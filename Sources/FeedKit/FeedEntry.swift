import Foundation

/// One committed change: where it sits in the feed, when and by whom it was made, and the
/// typed event. Members of the event can be read on the entry directly (`entry.after`).
@dynamicMemberLookup
public struct FeedEntry<Event: Sendable>: Sendable {
  /// The entry's position; resume after it with ``FeedStart/after(_:)``.
  public let cursor: Cursor
  /// When the change committed.
  public let time: Date
  /// Who made the change: a library writer's name, or `external` for any other client.
  public let origin: String
  /// What changed.
  public let event: Event

  /// Creates an entry; sources create these.
  public init(cursor: Cursor, time: Date, origin: String, event: Event) {
    self.cursor = cursor
    self.time = time
    self.origin = origin
    self.event = event
  }

  /// A member of the event, e.g. `entry.after` for `entry.event.after`.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Event, Value>) -> Value { event[keyPath: keyPath] }
}

extension FeedEntry: Equatable where Event: Equatable {}
