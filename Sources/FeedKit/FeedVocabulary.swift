#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A position in a feed: the number of an entry. Cursors only increase, commit order is
/// cursor order, and a number is never used twice.
///
/// A cursor prints as its number and parses from it (`Cursor("42")`), and encodes in JSON
/// as that number. Store ``value`` (or the encoded cursor) to resume later with
/// ``FeedStart/after(_:)``.
public struct Cursor: Hashable, Comparable, Sendable, Codable, LosslessStringConvertible {
  /// The number, as the feed's source stores it.
  public let value: Int64

  /// The cursor numbered `value`, for instance one read back from where a consumer stored it.
  public init(_ value: Int64) { self.value = value }

  /// Parses a decimal cursor as a person typed it; nil unless it is a whole number from 0
  /// to `Int64.max`, digits only (no sign, no spaces).
  public init?(_ description: String) {
    guard !description.isEmpty, description.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
      let value = Int64(description)
    else { return nil }
    self.value = value
  }

  /// Reads a cursor stored as a bare number, the form ``encode(to:)`` writes.
  public init(from decoder: any Decoder) throws {
    value = try decoder.singleValueContainer().decode(Int64.self)
  }

  /// Writes the cursor as a bare number (`42` in JSON, not an object), as `sessionctl --json` prints it.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(value)
  }

  /// The position before any entry was ever written: the cursor of a snapshot of a log that
  /// has had no change.
  public static let zero = Cursor(0)

  /// The cursor right after this one, or nil after the largest one (`Int64.max`), which no
  /// entry can follow. Cursors come from storage that other tools can edit, so this never traps.
  package var next: Cursor? {
    let (sum, overflow) = value.addingReportingOverflow(1)
    return overflow ? nil : Cursor(sum)
  }

  /// The cursor right before this one, or nil before the smallest one (`Int64.min`).
  package var previous: Cursor? {
    let (difference, overflow) = value.subtractingReportingOverflow(1)
    return overflow ? nil : Cursor(difference)
  }

  /// Orders cursors by number, which is commit order.
  public static func < (lhs: Cursor, rhs: Cursor) -> Bool { lhs.value < rhs.value }

  /// The number in decimal.
  public var description: String { String(value) }
}

/// Where a subscription starts reading.
public enum FeedStart: Sendable, Equatable {
  /// Only what commits after subscribing.
  case now
  /// From the oldest entry still kept.
  case beginning
  /// From the entry after this cursor (exclusive), e.g. the last one a consumer saw.
  case after(Cursor)
  /// As ``after(_:)``, checking first that the entry at the cursor is still the one that
  /// committed at `time` (to the millisecond): a log restored from an older backup that
  /// has grown past the cursor again fails with ``FeedError/historyRewritten(cursor:reason:)``
  /// instead of resuming silently with other changes under the same cursors.
  case afterEntry(Cursor, time: Date)
}

/// One committed change: where it sits in the feed, when and by whom it was made, and the
/// typed change. Members of the change can be read on the entry directly (`entry.after`).
///
/// Entries come from a feed's source (or from decoding what one encoded): the cursor, time
/// and origin are what the log recorded. Tests and previews get real ones from a store (for
/// sessions, the in-memory store).
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

  @inlinable package init(cursor: Cursor, time: Date, origin: String, change: Change) {
    self.cursor = cursor
    self.time = time
    self.origin = origin
    self.change = change
  }

  /// A member of the change, e.g. `entry.after` for `entry.change.after`.
  public subscript<Value>(dynamicMember keyPath: KeyPath<Change, Value>) -> Value { change[keyPath: keyPath] }
}

extension FeedEntry: Equatable where Change: Equatable {}

/// The oldest and newest cursors of a log.
public struct FeedBounds: Sendable, Equatable {
  /// The oldest entry still kept, or nil when none is.
  public let oldest: Cursor?
  /// The newest cursor ever handed out (``Cursor/zero`` for a log never written).
  public let head: Cursor

  package init(oldest: Cursor?, head: Cursor) {
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

/// The one error type of FeedKit: a cursor that cannot be served.
public enum FeedError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Entries right after `requested` were removed by compaction; the oldest kept entry is
  /// `oldestAvailable`. Resume from a snapshot, or accept the loss explicitly by reading
  /// from ``FeedStart/beginning``.
  case cursorCompacted(requested: Cursor, oldestAvailable: Cursor)
  /// `requested` is beyond the newest cursor `head`: it was never handed out by this feed.
  case cursorAhead(requested: Cursor, head: Cursor)
  /// The history a subscriber followed is not the log any more: the newest cursor moved
  /// back below it, the entry at its cursor changed or vanished (a restore of an older
  /// backup, a reset sequence), or the file was replaced. Cursors after `cursor` may name
  /// other changes, so none is delivered: take a new snapshot.
  case historyRewritten(cursor: Cursor, reason: String)
  /// The oldest kept entry has the smallest cursor there is (`Int64.min`), so no cursor comes
  /// before it and the log cannot be read from its beginning. Only a log edited by hand holds
  /// such an entry: read after a cursor instead, or remove the entry.
  case noCursorBefore(Cursor)

  /// A sentence for a person, in the feed's own terms (a command-line tool adds its hint).
  public var description: String {
    switch self {
    case .cursorCompacted(let requested, let oldest):
      "cursor \(requested) was compacted away; the oldest available entry is \(oldest): "
        + (oldest.previous.map { "resume after cursor \($0) to accept the gap, or " } ?? "")
        + "start again from a snapshot"
    case .cursorAhead(let requested, let head):
      "cursor \(requested) is ahead of the newest entry \(head)"
        + (requested.value > 0 ? " (was the log restored from an older backup?)" : "")
    case .historyRewritten(let cursor, let reason):
      "the history changed under cursor \(cursor): \(reason); later cursors may name other changes now, "
        + "so start again from a snapshot"
    case .noCursorBefore(let oldest):
      "the oldest entry has cursor \(oldest), the smallest there is, so the feed cannot be read from its "
        + "beginning; read after a cursor instead (after cursor 0, say), or remove the entry"
    }
  }
}
