import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A source and its wake-up signal: the factory of subscriptions. Stores keep one and
/// forward their feed methods to it; apps see only the subscriptions it hands out.
package struct Feed<Change: Sendable, Snapshot: Sendable>: Sendable {
  /// The log read by cursor.
  package let source: any FeedSource<Change, Snapshot>
  /// What wakes subscribers when the log may have grown.
  package let signal: any WakeSignal
  /// How many entries a subscriber reads per query.
  package let pageSize: Int
  /// The last page subscribers read, for the others waiting on the same cursor.
  let sharedPage: SharedPage<Change>

  package init(source: any FeedSource<Change, Snapshot>, signal: any WakeSignal, pageSize: Int = 256) {
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

  /// Every entry after `start` that `include` accepts (every one when it is nil), once, in
  /// order, as it commits.
  /// - Throws: ``FeedError`` for a cursor that is compacted or ahead of the log; the source's error.
  package func changes(
    from start: FeedStart, where include: (@Sendable (FeedEntry<Change>) -> Bool)? = nil
  ) throws -> FeedSubscription<Change, Snapshot> {
    let listener = listen()
    if start == .now {
      // The head and the entry there, read together: reads check that the log keeps it.
      let (_, cursor, last) = try source.snapshot()
      return FeedSubscription(feed: self, cursor: cursor, listener: listener, last: last, include: include)
    }
    let cursor = try resolve(start, bounds: source.bounds())
    return FeedSubscription(
      feed: self, cursor: cursor, listener: listener, last: try entry(at: cursor, for: start),
      include: include)
  }

  /// The current state and every change after it, with no gap and no duplicate.
  package func snapshotAndChanges() throws -> SnapshotSubscription<Change, Snapshot> {
    let listener = listen()
    let (state, cursor, last) = try source.snapshot()
    return SnapshotSubscription(
      state: state, cursor: cursor,
      changes: FeedSubscription(feed: self, cursor: cursor, listener: listener, last: last))
  }

  /// Registers a subscription for wake-ups, and as one of the subscribers the shared page
  /// serves, for as long as the returned token lives.
  private func listen() -> WakeListener {
    let listener = signal.listen()
    let page = sharedPage
    page.join()
    return WakeListener {
      page.leave()
      withExtendedLifetime(listener) {}
    }
  }

  /// The state now, then each new state as changes commit; consecutive equal states are dropped.
  /// - Parameter state: the state after an entry, given the state before it.
  package func values(_ state: @escaping @Sendable (Snapshot, FeedEntry<Change>) -> Snapshot) -> FeedValues<
    Change, Snapshot
  >
  where Snapshot: Equatable {
    FeedValues(feed: self, state: state, start: nil)
  }

  /// Up to `limit` entries after `start`, without waiting: a page of history.
  package func history(from start: FeedStart, limit: Int) throws -> [FeedEntry<Change>] {
    let cursor = try resolve(start, bounds: source.bounds())
    // A plain `.after` page is one read, with nothing delivered before it to compare:
    // only a given time is checked (one more row read).
    guard case .afterEntry = start else { return try read(after: cursor, limit: limit) }
    return try read(after: cursor, last: entry(at: cursor, for: start), limit: limit)
  }

  /// Up to `limit` entries after `start` that `include` accepts, without waiting: the log
  /// is read page by page, from `start` towards the head, until `limit` are found.
  package func history(
    from start: FeedStart, limit: Int, where include: @Sendable (FeedEntry<Change>) -> Bool
  ) throws -> [FeedEntry<Change>] {
    var found: [FeedEntry<Change>] = []
    var page = try history(from: start, limit: pageSize)
    while true {
      found.append(contentsOf: page.lazy.filter(include).prefix(limit - found.count))
      guard found.count < limit, page.count == pageSize, let last = page.last else { return found }
      page = try read(after: last.cursor, last: last, limit: pageSize)
    }
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
    let found = try entries(at: cursor, after: before, limit: 1).first.flatMap {
      $0.cursor == cursor ? $0 : nil
    }
    guard let expected else { return found }
    guard let found else {
      // Compacted away (nothing left to compare with), or gone from a log that was rewritten.
      guard cursor >= (try source.bounds()).firstAvailable else { return nil }
      throw FeedError.historyRewritten(cursor: cursor, reason: "the entry at \(cursor) is gone")
    }
    guard Self.sameMillisecond(found.time, expected) else {
      throw FeedError.historyRewritten(
        cursor: cursor,
        reason: "the change at \(cursor) committed at \(Self.millisecondText(found.time)), not at the time "
          + "given, \(Self.millisecondText(expected)): either the log was rewritten (a restore of an older "
          + "backup) since that time was printed for \(cursor), or the time given is not the one printed")
    }
    return found
  }

  static func sameMillisecond(_ first: Date, _ second: Date) -> Bool {
    (first.timeIntervalSince1970 * 1000).rounded() == (second.timeIntervalSince1970 * 1000).rounded()
  }

  /// A time to the millisecond, in UTC, as entries print it: `2026-11-29T20:33:36.562Z`.
  static func millisecondText(_ date: Date) -> String {
    // A quarter of a millisecond in: the style drops (or rounds) what is below it.
    let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
    return Date(timeIntervalSince1970: (milliseconds + 0.25) / 1000)
      .formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
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
      entries = try self.entries(at: cursor, after: before, limit: limit == .max ? limit : limit + 1)
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

  /// The source's entries after `before`, read to start at the entry at `cursor` (its
  /// successor), where the reader stands: a rewritten history the source reports (a
  /// replaced file, a dropped schema) is reported under `cursor`, the last cursor the
  /// reader delivered or was given, not under the one the query starts after.
  private func entries(at cursor: Cursor, after before: Cursor, limit: Int) throws -> [FeedEntry<Change>] {
    do {
      return try source.entries(after: before, limit: limit)
    } catch FeedError.historyRewritten(_, let reason) {
      throw FeedError.historyRewritten(cursor: cursor, reason: reason)
    }
  }

  /// Throws unless each entry's cursor follows the one before it. Looks at the cursors
  /// alone: a subscriber's every page passes here, and copying whole entries of a generic
  /// type costs more than the comparison.
  private static func requireConsecutive(_ entries: [FeedEntry<Change>]) throws {
    guard var previous = entries.first?.cursor else { return }
    for index in entries.indices.dropFirst() {
      let cursor = entries[index].cursor
      if cursor != previous.next { throw missing(after: previous, before: cursor) }
      previous = cursor
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

/// A log that a feed reads: entries in cursor order, read in pages.
package protocol FeedSource<Change, Snapshot>: Sendable {
  /// The typed change of each entry.
  associatedtype Change: Sendable
  /// The state a subscriber can start from.
  associatedtype Snapshot: Sendable

  /// Up to `limit` entries with cursors greater than `cursor`, oldest first.
  func entries(after cursor: Cursor, limit: Int) throws -> [FeedEntry<Change>]
  /// The oldest kept cursor and the newest cursor.
  func bounds() throws -> FeedBounds
  /// The current state, the cursor of the newest entry it includes, and the entry at that
  /// cursor while the log still holds it (nil once compaction removed it, or before any
  /// change), read atomically. Subscribers that start from a snapshot check that the log keeps
  /// that entry, so a history rewritten under them (a restore of an older backup that grew
  /// past the cursor again) ends them instead of going on under reused cursors.
  func snapshot() throws -> (state: Snapshot, cursor: Cursor, last: FeedEntry<Change>?)
  /// Whether `error`, thrown by a read of this source, is a fault that passes (a server
  /// that cannot be reached for now). A subscription that meets one does not end: it waits
  /// for the signal's next wake-up and reads again from its cursor, so a source that says
  /// yes must have a signal that keeps waking subscribers while the fault lasts (a poll).
  /// Every other error ends the subscription with a throw.
  func isTransient(_ error: any Error) -> Bool
  /// A number that moves whenever a read of this source could return something other than
  /// it returned before (a commit of any connection, a restore, a replaced file), or nil
  /// when the source cannot tell cheaply. Subscribers asking for the same page while it
  /// keeps one value share one read of it; with nil every subscriber reads its own.
  func readVersion() throws -> Int64?
}

extension FeedSource {
  /// No error passes: every read error ends a subscription.
  package func isTransient(_ error: any Error) -> Bool { false }

  /// No version: every subscriber reads its own pages.
  package func readVersion() throws -> Int64? { nil }
}

/// The page a feed's subscribers read last, handed to each subscriber that asks for the same
/// page while the source's ``FeedSource/readVersion()`` has not moved since it was read: a
/// commit that wakes many subscribers costs one query, and what a subscriber takes is exactly
/// what its own read would return. A source without a version shares nothing, and neither
/// does a feed with fewer than two subscriptions: a lone subscriber reads its page without
/// reading the version first, and nobody reads ahead for it.
package final class SharedPage<Change: Sendable>: Sendable {
  /// What a page was read for: the cursor after which it starts, the entry delivered at
  /// that cursor (its time to the millisecond and origin, which the read checked), and the limit.
  struct Key: Equatable {
    var cursor: Cursor
    var lastMillisecond: Int64?
    var lastOrigin: String?
    var limit: Int

    init(cursor: Cursor, last: FeedEntry<Change>?, limit: Int) {
      self.cursor = cursor
      lastMillisecond = last.map { Int64((($0.time.timeIntervalSince1970) * 1000).rounded()) }
      lastOrigin = last?.origin
      self.limit = limit
    }
  }

  private struct Page {
    var key: Key
    /// The entry delivered at the key's cursor, when there was one.
    var last: FeedEntry<Change>?
    /// The source's version read just before the page.
    var version: Int64
    var entries: [FeedEntry<Change>]
  }

  private let page = Mutex<Page?>(nil)
  /// The subscriptions alive on the feeds that share this page.
  private let subscribers = Atomic(0)

  package init() {}

  /// Counts a subscription in, until ``leave()``.
  func join() { subscribers.add(1, ordering: .relaxed) }

  func leave() { subscribers.subtract(1, ordering: .relaxed) }

  /// Whether another subscriber may ask for a page this one reads.
  private var isShared: Bool { subscribers.load(ordering: .relaxed) >= 2 }

  /// The page after `cursor`: the one read earlier for the same key while `version` still
  /// returns what it returned before that read, else what `read` returns now. Both run under
  /// the page's lock. Without another subscriber, what `read` returns now, unkept.
  func entries(
    after cursor: Cursor, last: FeedEntry<Change>?, limit: Int, version: () throws -> Int64?,
    read: () throws -> [FeedEntry<Change>]
  ) throws -> [FeedEntry<Change>] {
    guard isShared else { return try read() }
    let key = Key(cursor: cursor, last: last, limit: limit)
    return try page.withLock { page in
      let now = try version()
      if let now, let kept = page, kept.key == key, kept.version == now { return kept.entries }
      let entries = try read()
      page = now.map { Page(key: key, last: last, version: $0, entries: entries) }
      return entries
    }
  }

  /// Reads the page that the subscribers who delivered the last one will ask for next, so
  /// that a wake-up finds it read: the watcher thread that signalled calls this while the
  /// subscribers' tasks are being scheduled. Nothing happens before a first page was read;
  /// a read that throws is dropped (each subscriber then reads, and throws, itself).
  func readAhead(
    version: () throws -> Int64?,
    read: (_ cursor: Cursor, _ last: FeedEntry<Change>?, _ limit: Int) throws -> [FeedEntry<Change>]
  ) {
    guard isShared else { return }
    page.withLock { page in
      guard let current = page else { return }
      let (cursor, last) =
        current.entries.last.map { ($0.cursor, $0) } ?? (current.key.cursor, current.last)
      // A page still valid for the cursor it starts at needs no second read.
      guard let now = try? version() else { return }
      let key = Key(cursor: cursor, last: last, limit: current.key.limit)
      guard key != current.key || now != current.version else { return }
      guard let entries = try? read(cursor, last, current.key.limit) else { return }
      page = Page(key: key, last: last, version: now, entries: entries)
    }
  }
}
