/// Where a subscription starts reading.
public enum FeedStart: Sendable, Equatable {
  /// Only what commits after subscribing.
  case now
  /// From the oldest entry still kept.
  case beginning
  /// From the entry after this cursor (exclusive), e.g. the last one a consumer saw.
  case after(Cursor)
}
