import Foundation

/// A source and its wake-up signal: the factory of subscriptions.
public struct Feed<Change: Sendable, Snapshot: Sendable>: Sendable {
  /// The log read by cursor.
  package let source: any FeedSource<Change, Snapshot>
  /// What wakes subscribers when the log may have grown.
  package let signal: any WakeSignal
  /// How many entries a subscriber reads per query.
  package let pageSize: Int
  /// The last page subscribers read, for the others waiting on the same cursor.
  let sharedPage: SharedPage<Change>

  /// Creates a feed over `source`, woken by `signal`.
  public init(source: any FeedSource<Change, Snapshot>, signal: any WakeSignal, pageSize: Int = 256) {
    self.init(source: source, signal: signal, pageSize: pageSize, sharedPage: SharedPage())
  }

  /// Creates a feed whose subscribers share `sharedPage` with the other feeds made with it:
  /// one made where the feed itself cannot be reached yet (a watcher's callback) can read
  /// ahead for them (``readAhead()``).
  package init(
    source: any FeedSource<Change, Snapshot>, signal: any WakeSignal, pageSize: Int = 256,
    sharedPage: SharedPage<Change>
  ) {
    self.source = source
    self.signal = signal
    self.pageSize = max(1, pageSize)
    self.sharedPage = sharedPage
  }

  /// Reads ahead the page that subscribers woken just now will ask for, on the caller's
  /// thread (see ``SharedPage/readAhead(version:read:)``): for a watcher thread right after
  /// it signalled, never for a writer.
  package func readAhead() {
    sharedPage.readAhead(version: { try source.readVersion() }) { cursor, last, limit in
      try read(after: cursor, last: last, limit: limit)
    }
  }

  /// Every entry after `start`, once, in order, as it commits.
  /// - Throws: ``FeedError`` for a cursor that is compacted or ahead of the log; the source's error.
  public func changes(from start: FeedStart) throws -> FeedSubscription<Change, Snapshot> {
    let listener = signal.listen()
    let cursor = try resolve(start, bounds: source.bounds())
    return FeedSubscription(
      feed: self, cursor: cursor, listener: listener, last: try entry(at: cursor, for: start))
  }

  /// The current state and every change after it, with no gap and no duplicate.
  public func snapshotAndChanges() throws -> SnapshotSubscription<Change, Snapshot> {
    let listener = signal.listen()
    let (state, cursor) = try source.snapshot()
    return SnapshotSubscription(
      state: state, cursor: cursor, changes: FeedSubscription(feed: self, cursor: cursor, listener: listener))
  }

  /// The state now, then each new state as changes commit; consecutive equal states are dropped.
  /// - Parameter state: the state after an entry (for sessions, `\.change.after`).
  public func values(_ state: @escaping @Sendable (FeedEntry<Change>) -> Snapshot) -> FeedValues<
    Change, Snapshot
  >
  where Snapshot: Equatable {
    FeedValues(feed: self, state: state, start: nil)
  }

  /// Up to `limit` entries after `start`, without waiting: a page of history.
  public func history(from start: FeedStart, limit: Int) throws -> [FeedEntry<Change>] {
    let cursor = try resolve(start, bounds: source.bounds())
    // A plain `.after` page is one read, with nothing delivered before it to compare:
    // only a given time is checked (one more row read).
    guard case .afterEntry = start else { return try read(after: cursor, limit: limit) }
    return try read(after: cursor, last: entry(at: cursor, for: start), limit: limit)
  }

  /// The entry at the cursor a start resumes after, when the log still holds it, so that
  /// reads can check it stays there; for ``FeedStart/afterEntry(_:time:)`` it must be the
  /// one committed at that time.
  private func entry(at cursor: Cursor, for start: FeedStart) throws -> FeedEntry<Change>? {
    let expected: Date?
    switch start {
    case .after: expected = nil
    case .afterEntry(_, let time): expected = time
    case .now, .beginning: return nil
    }
    guard let before = cursor.previous else { return nil }
    let found = try source.entries(after: before, limit: 1).first.flatMap { $0.cursor == cursor ? $0 : nil }
    guard let expected else { return found }
    guard let found else {
      // Compacted away (nothing left to compare with), or gone from a log that was rewritten.
      guard cursor >= (try source.bounds()).firstAvailable else { return nil }
      throw FeedError.historyRewritten(cursor: cursor, reason: "the entry at \(cursor) is gone")
    }
    guard Self.sameMillisecond(found.time, expected) else {
      throw FeedError.historyRewritten(
        cursor: cursor,
        reason: "the entry at \(cursor) committed at another time than the one given: the log was rewritten")
    }
    return found
  }

  static func sameMillisecond(_ first: Date, _ second: Date) -> Bool {
    (first.timeIntervalSince1970 * 1000).rounded() == (second.timeIntervalSince1970 * 1000).rounded()
  }

  /// What a subscriber reads next: ``read(after:last:limit:)``, or the same page another
  /// subscriber read while the source's version has not moved since (see ``SharedPage``).
  func subscriberPage(after cursor: Cursor, last: FeedEntry<Change>?) throws -> [FeedEntry<Change>] {
    try sharedPage.entries(
      after: cursor, last: last, limit: pageSize, version: { try source.readVersion() },
      read: { try read(after: cursor, last: last, limit: pageSize) })
  }

  /// The entries after `cursor`, checking that none right after it was compacted away,
  /// and, when `last` (the entry delivered at `cursor`) is given, that the log still holds
  /// it and has not moved back below it.
  func read(after cursor: Cursor, last: FeedEntry<Change>? = nil, limit: Int) throws -> [FeedEntry<Change>] {
    var entries: [FeedEntry<Change>]
    var lastIsGone = false
    if let last, let before = cursor.previous {
      // One query that starts at `last` itself.
      entries = try source.entries(after: before, limit: limit == .max ? limit : limit + 1)
      if let first = entries.first, first.cursor == cursor {
        guard Self.sameMillisecond(first.time, last.time), first.origin == last.origin else {
          throw FeedError.historyRewritten(
            cursor: cursor, reason: "the entry at \(cursor) is not the one delivered any more")
        }
        entries.removeFirst()
      } else {
        lastIsGone = true
      }
    } else {
      entries = try source.entries(after: cursor, limit: limit)
    }
    if let first = entries.first, first.cursor == cursor.next, !lastIsGone {
      try Self.requireConsecutive(entries)
      return entries
    }
    let bounds = try source.bounds()
    if bounds.head < cursor {
      throw FeedError.historyRewritten(
        cursor: cursor, reason: "the newest cursor moved back to \(bounds.head)")
    }
    if lastIsGone, cursor >= bounds.firstAvailable {
      throw FeedError.historyRewritten(
        cursor: cursor, reason: "the entry at \(cursor) vanished without compaction")
    }
    if bounds.isCompacted(after: cursor) {
      throw FeedError.cursorCompacted(requested: cursor, oldestAvailable: bounds.firstAvailable)
    }
    // Compaction removes the oldest entries only, and cursors are handed out one by one: a
    // missing cursor past the oldest kept means someone deleted or inserted rows by hand.
    if let first = entries.first, first.cursor != cursor.next {
      throw Self.missing(after: cursor, before: first.cursor)
    }
    try Self.requireConsecutive(entries)
    return entries
  }

  /// Throws unless each entry's cursor follows the one before it.
  private static func requireConsecutive(_ entries: [FeedEntry<Change>]) throws {
    for (previous, entry) in zip(entries, entries.dropFirst()) where entry.cursor != previous.cursor.next {
      throw missing(after: previous.cursor, before: entry.cursor)
    }
  }

  /// The error for a log that holds no entry between `cursor` and `next` (`cursor < next`).
  private static func missing(after cursor: Cursor, before next: Cursor) -> FeedError {
    let first = cursor.next ?? next
    let gap = first == next.previous ? "entry \(first) is" : "entries \(first)…\(next.previous ?? first) are"
    return FeedError.historyRewritten(
      cursor: cursor,
      reason: "\(gap) missing between \(cursor) and \(next); compaction removes only the oldest entries, so "
        + "rows were deleted or inserted by hand")
  }

  private func resolve(_ start: FeedStart, bounds: FeedBounds) throws -> Cursor {
    switch start {
    case .now: return bounds.head
    case .beginning:
      guard let oldest = bounds.oldest else { return bounds.head }
      // Reading starts after a cursor; the smallest one has none before it.
      guard let before = oldest.previous else { throw FeedError.noCursorBefore(oldest) }
      return before
    case .afterEntry(let cursor, _) where cursor > bounds.head:
      // The change the caller saw at `cursor` was there: a head below it was moved back.
      throw FeedError.historyRewritten(cursor: cursor, reason: "the newest cursor is now \(bounds.head)")
    case .after(let cursor), .afterEntry(let cursor, _):
      if cursor > bounds.head { throw FeedError.cursorAhead(requested: cursor, head: bounds.head) }
      if bounds.isCompacted(after: cursor) {
        throw FeedError.cursorCompacted(requested: cursor, oldestAvailable: bounds.firstAvailable)
      }
      return cursor
    }
  }
}
