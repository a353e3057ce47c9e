/// The one error type of FeedKit: a cursor that cannot be served.
public enum FeedError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Entries right after `requested` were removed by compaction; the oldest kept entry is
  /// `oldestAvailable`. Resume from a snapshot, or accept the loss explicitly.
  case cursorCompacted(requested: Cursor, oldestAvailable: Cursor)
  /// `requested` is beyond the newest cursor `head`: it was never handed out by this feed.
  case cursorAhead(requested: Cursor, head: Cursor)

  /// A sentence for a person.
  public var description: String {
    switch self {
    case .cursorCompacted(let requested, let oldest):
      "cursor \(requested) was compacted away; the oldest available entry is \(oldest) (resume with --since \(oldest.rawValue - 1) or take a new snapshot)"
    case .cursorAhead(let requested, let head):
      "cursor \(requested) is ahead of the newest entry \(head)"
    }
  }
}
