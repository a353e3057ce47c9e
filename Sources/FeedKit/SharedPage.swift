import Foundation
import Synchronization

/// The page a feed's subscribers read last, handed to every subscriber that asks for the
/// same page while the log is provably unchanged: when a commit wakes many of them, one
/// reads the log and the others take its result, instead of each running the same query and
/// decoding the same entries.
///
/// A page is handed over only to a subscriber that asks for the same cursor, limit and
/// last-delivered entry, and only while the source's ``FeedSource/readVersion()`` still has
/// the value it had just before the page was read. That version moves with every commit of
/// any connection and with anything else that could change what a read returns (a restore, a
/// replaced file), so a page handed over is exactly what a read of the subscriber's own would
/// return at that moment. A source without a version shares nothing. Reads through it are
/// serialized, as reads of one connection are anyway; a read that throws is not kept.
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

  /// A page that no subscriber read yet.
  package init() {}

  /// The page after `cursor`: the one read earlier for the same key while `version` still
  /// returns what it returned before that read, else what `read` returns now. Both run under
  /// the page's lock.
  func entries(
    after cursor: Cursor, last: FeedEntry<Change>?, limit: Int, version: () throws -> Int64?,
    read: () throws -> [FeedEntry<Change>]
  ) throws -> [FeedEntry<Change>] {
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
