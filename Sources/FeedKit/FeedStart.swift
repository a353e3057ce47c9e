import Foundation

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
