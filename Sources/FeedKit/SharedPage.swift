import Foundation
import Synchronization

/// The page a feed's subscribers read last, handed to every subscriber that waits on the
/// same cursor: when a commit wakes many of them, one reads the log and the others take its
/// result, instead of each running the same query and decoding the same entries.
///
/// A page is handed over only to a subscriber that asks for the same cursor, limit and
/// last-delivered entry, and only if it was read after the wake-up that subscriber
/// answers (its signal generation was at least the subscriber's when the read began), so it
/// holds every entry a read of its own would. Reads through it are serialized, as reads of
/// one connection are anyway; a read that throws is not kept.
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
    /// The signal's generation when the read began.
    var generation: UInt64
    var entries: [FeedEntry<Change>]
  }

  private let page = Mutex<Page?>(nil)

  /// A page that no subscriber read yet.
  package init() {}

  /// The page after `cursor` read after `generation`, from an earlier read or from `read`
  /// (run with the signal's generation read just before it, under the page's lock).
  func entries(
    after cursor: Cursor, last: FeedEntry<Change>?, limit: Int, generation: UInt64,
    currentGeneration: () -> UInt64, read: () throws -> [FeedEntry<Change>]
  ) throws -> [FeedEntry<Change>] {
    let key = Key(cursor: cursor, last: last, limit: limit)
    return try page.withLock { page in
      if let page, page.key == key, page.generation >= generation { return page.entries }
      let started = currentGeneration()
      let entries = try read()
      page = Page(key: key, last: last, generation: started, entries: entries)
      return entries
    }
  }

  /// Reads the page that the subscribers who delivered the last one will ask for next, so
  /// that a wake-up finds it read: the watcher thread that signalled calls this while the
  /// subscribers' tasks are being scheduled. Nothing happens before a first page was read;
  /// a read that throws is dropped (each subscriber then reads, and throws, itself).
  func readAhead(
    currentGeneration: () -> UInt64,
    read: (_ cursor: Cursor, _ last: FeedEntry<Change>?, _ limit: Int) throws -> [FeedEntry<Change>]
  ) {
    page.withLock { page in
      guard let current = page else { return }
      let (cursor, last) =
        current.entries.last.map { ($0.cursor, $0) } ?? (current.key.cursor, current.last)
      let started = currentGeneration()
      guard let entries = try? read(cursor, last, current.key.limit) else { return }
      page = Page(
        key: Key(cursor: cursor, last: last, limit: current.key.limit), last: last, generation: started,
        entries: entries)
    }
  }
}
