import FeedKit
import Foundation
import Synchronization

/// A FeedSource over an array, to test FeedKit alone: events are Ints, the snapshot is
/// the last event.
final class ArrayLog: FeedSource {
  struct Contents {
    var entries: [FeedEntry<Int>] = []
    var head = Cursor.zero
    /// Moves with every change to the entries.
    var version: Int64 = 0
  }

  let contents = Mutex(Contents())
  let beacon = Beacon()
  /// How many times ``entries(after:limit:)`` ran.
  let reads = Mutex(0)
  /// What reads of entries throw while set, as a server that cannot be reached would.
  let failure = Mutex<ReadFailure?>(nil)
  /// Runs once, right after the next read of entries: a commit of another process that
  /// lands between a page and what is read after it.
  let afterNextRead = Mutex<(@Sendable () -> Void)?>(nil)

  /// A read that failed; `transient` says whether the log calls it a fault that passes.
  struct ReadFailure: Error, Equatable {
    var transient: Bool
  }
  var feed: Feed<Int, Int> { Feed(source: self, signal: beacon, pageSize: 3) }

  /// Appends `value` and wakes subscribers.
  @discardableResult
  func append(_ value: Int) -> Cursor {
    let cursor = appendUnnoticed(value)
    beacon.signal()
    return cursor
  }

  /// Appends `value` at `cursor`, as a hand edit of a stored log could (any Int64 at all).
  func append(_ value: Int, at cursor: Cursor) {
    contents.withLock { log in
      log.entries.append(FeedEntry(cursor: cursor, time: Date(), origin: "hand", change: value))
      log.entries.sort { $0.cursor < $1.cursor }
      log.version += 1
      log.head = max(log.head, cursor)
    }
    beacon.signal()
  }

  /// Drops entries before `cursor`.
  func compact(before cursor: Cursor) {
    contents.withLock { log in
      log.entries.removeAll { $0.cursor < cursor }
      log.version += 1
    }
  }

  /// Replaces the entries after `cursor` with `values` and moves the head to the last of
  /// them, without waking anyone: another process restoring an older copy of the log.
  func rewrite(after cursor: Cursor, with values: [Int]) {
    contents.withLock { log in
      log.entries.removeAll { $0.cursor > cursor }
      log.head = cursor
      for value in values {
        log.head = log.head.next ?? log.head
        log.entries.append(FeedEntry(cursor: log.head, time: Date(), origin: "restore", change: value))
      }
      log.version += 1
    }
  }

  /// Appends `value` without waking anyone: a commit of another process that no watcher
  /// noticed (none runs while nobody subscribes).
  @discardableResult
  func appendUnnoticed(_ value: Int) -> Cursor {
    contents.withLock { log in
      log.head = log.head.next ?? log.head
      log.version += 1
      log.entries.append(FeedEntry(cursor: log.head, time: Date(), origin: "test", change: value))
      return log.head
    }
  }

  func entries(after cursor: Cursor, limit: Int) throws -> [FeedEntry<Int>] {
    reads.withLock { $0 += 1 }
    if let failure = failure.withLock({ $0 }) { throw failure }
    defer { afterNextRead.withLock { $0.take() }?() }
    return contents.withLock { Array($0.entries.filter { $0.cursor > cursor }.prefix(limit)) }
  }

  /// The entry the log holds at `cursor`.
  func entry(at cursor: Cursor) -> FeedEntry<Int>? {
    contents.withLock { $0.entries.first { $0.cursor == cursor } }
  }

  func bounds() -> FeedBounds {
    contents.withLock { FeedBounds(oldest: $0.entries.first?.cursor, head: $0.head) }
  }

  func snapshot() -> (state: Int, cursor: Cursor, last: FeedEntry<Int>?) {
    contents.withLock { log in
      (log.entries.last?.change ?? 0, log.head, log.entries.last.flatMap { $0.cursor == log.head ? $0 : nil })
    }
  }

  func isTransient(_ error: any Error) -> Bool { (error as? ReadFailure)?.transient == true }

  func readVersion() -> Int64? { contents.withLock { $0.version } }
}
