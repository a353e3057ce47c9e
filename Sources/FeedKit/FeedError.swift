/// The one error type of FeedKit: a cursor that cannot be served.
public enum FeedError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Entries right after `requested` were removed by compaction; the oldest kept entry is
  /// `oldestAvailable`. Resume from a snapshot, or accept the loss explicitly.
  case cursorCompacted(requested: Cursor, oldestAvailable: Cursor)
  /// `requested` is beyond the newest cursor `head`: it was never handed out by this feed.
  case cursorAhead(requested: Cursor, head: Cursor)
  /// The history a subscriber followed is not the log any more: the newest cursor moved
  /// back below it, the entry at its cursor changed or vanished (a restore of an older
  /// backup, a reset sequence), or the file was replaced. Cursors after `cursor` may name
  /// other changes now, so none is delivered: take a new snapshot.
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
