import Dispatch
import Synchronization
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A ``SessionRepository`` without a file, for tests and previews.
///
/// Not a mock: it keeps ``SessionStore``'s contract, result for result and error for error.
/// It validates usernames and origins by the same rules, skips no-op writes (a name that
/// differs only in its Unicode normalization is the same name), numbers entries with
/// cursors that never repeat, keeps times to the millisecond as the file does, serves
/// `.now`, `.beginning`, `.after(cursor)`, `.afterEntry(cursor, time:)`,
/// snapshot-then-changes and values alike, compacts by count, cursor or age with the same
/// ``CompactionResult`` result, and raises the same `FeedError`s. A differential test
/// applies random sequences of every operation to both stores and compares every result.
///
/// What it cannot do: another process or the sqlite3 shell cannot change it, so it never
/// records the origin `external`.
public final class InMemorySessionStore: _SessionBackedStore, SessionBackend {
  /// The origin recorded on this store's writes.
  public let origin: String
  private let log: MemoryLog
  private let beacon = Beacon()
  package let feed: Feed<SessionChange, SessionState>

  /// Creates a store holding `state` (its time rounded to the millisecond) with an empty
  /// feed, whose writes record the origin `memory`: for previews.
  public init(state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date())) {
    origin = "memory"
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  /// Creates a store holding `state` (its time rounded to the millisecond) with an empty
  /// feed, whose writes record `origin`.
  /// - Throws: `invalidOrigin` for an origin ``SessionStore/init(path:options:)`` refuses too:
  ///   empty, longer than 64 characters, holding a control character, or `external`.
  public init(
    state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date()), origin: String
  ) throws {
    try Origin.validate(origin)
    self.origin = origin
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  /// This store, as the shared public behaviour sees it.
  public var _core: _SessionStoreCore { _SessionStoreCore(self) }

  package func currentState() -> SessionState { log.current.withLock { $0.state } }

  /// The current state. Reading memory cannot fail, so a preview needs no `try`.
  public var state: SessionState { currentState() }

  /// The oldest kept cursor and the newest cursor; reading memory cannot fail.
  public func bounds() -> FeedBounds { log.bounds() }

  /// Never throws: a store in memory is always writable.
  package func requireWritable() {}

  /// None: a write never waits, and runs on its caller's task.
  package var writeQueue: DispatchQueue? { nil }

  /// Applies `write` under the log's lock; nothing here can wait, so `isCancelled` is not
  /// asked (the shared `async` writes check the task before they start).
  package func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let outcome = try log.current.withLock { log throws -> WriteOutcome in
      guard let after = write.applied(to: log.state) else {
        return .unchanged(SessionSnapshot(state: log.state, cursor: log.head))
      }
      guard let next = log.head.next else {
        throw SessionStorageError(
          .cursorsExhausted,
          "the feed's cursor reached the largest integer (\(log.head)); no change can follow")
      }
      let now = Timestamp.rounded(Date())  // to the millisecond, as the file keeps times
      let state = SessionState(username: after.username, isLoggedIn: after.isLoggedIn, updatedAt: now)
      log.head = next
      let entry = SessionEntry(
        cursor: log.head, time: now, origin: origin, change: SessionChange(before: log.state, after: state))
      log.state = state
      log.entries.append(entry)
      return .committed(entry)
    }
    if outcome.entry != nil { beacon.signal() }
    return outcome
  }

  package func delete(_ deletion: Deletion) -> CompactionResult {
    log.current.withLock { log in
      let removed: Int
      switch deletion {
      case .keepingLast(let count): removed = log.entries.dropLast(count).count
      case .before(let cursor): removed = log.entries.prefix { $0.cursor < cursor }.count
      case .olderThan(let age):
        let cutoff = Date().addingTimeInterval(-Double(age.milliseconds) / 1000)
        removed = log.entries.prefix { $0.time < cutoff }.count
      }
      log.entries.removeFirst(removed)
      return CompactionResult(
        removed: removed, bounds: FeedBounds(oldest: log.entries.first?.cursor, head: log.head))
    }
  }
}

/// The in-memory log behind ``InMemorySessionStore``.
final class MemoryLog: FeedSource {
  struct Contents {
    var state: SessionState
    var entries: [SessionEntry] = []
    var head = Cursor.zero
  }

  let current: Mutex<Contents>

  /// A log holding `state`, its time rounded to the millisecond as the file keeps times.
  init(state: SessionState) {
    var state = state
    state.updatedAt = Timestamp.rounded(state.updatedAt)
    current = Mutex(Contents(state: state))
  }

  func entries(after cursor: Cursor, limit: Int) -> [SessionEntry] {
    current.withLock { log in
      let start = log.entries.firstIndex { $0.cursor > cursor } ?? log.entries.endIndex
      return Array(log.entries[start...].prefix(limit))
    }
  }

  func bounds() -> FeedBounds {
    current.withLock { FeedBounds(oldest: $0.entries.first?.cursor, head: $0.head) }
  }

  func snapshot() -> (state: SessionState, cursor: Cursor, last: SessionEntry?) {
    current.withLock { log in
      (log.state, log.head, log.entries.last.flatMap { $0.cursor == log.head ? $0 : nil })
    }
  }
}
