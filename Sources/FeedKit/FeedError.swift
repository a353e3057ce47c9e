/// The one error type of FeedKit: a cursor that cannot be served.
public enum FeedError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Entries right after `requested` were removed by compaction; the oldest kept entry is
  /// `oldestAvailable`. Resume from a snapshot, or accept the loss explicitly.
  case cursorCompacted(requested: Cursor, oldestAvailable: Cursor)
  /// `requested` is beyond the newest cursor `head`: it was never handed out by this feed.
  case cursorAhead(requested: Cursor, head: Cursor)
  /// The oldest kept entry has the smallest cursor there is (`Int64.min`), so no cursor comes
  /// before it and the log cannot be read from its beginning. Only a log edited by hand holds
  /// such an entry: read after a cursor instead, or remove the entry.
  case noCursorBefore(Cursor)

  /// A sentence for a person.
  public var description: String {
    switch self {
    case .cursorCompacted(let requested, let oldest):
      "cursor \(requested) was compacted away; the oldest available entry is \(oldest) ("
        + (oldest.previous.map { "resume with --since \($0) or " } ?? "") + "take a new snapshot)"
    case .cursorAhead(let requested, let head):
      "cursor \(requested) is ahead of the newest entry \(head)"
    case .noCursorBefore(let oldest):
      "the oldest entry has cursor \(oldest), the smallest there is, so the feed cannot be read from its "
        + "beginning; read after a cursor (--since 0), or remove the entry"
    }
  }
}
