import Dispatch
import Synchronization
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension SessionStore {
  /// A store in this process's memory, holding `state` (its time rounded to the
  /// millisecond) with an empty feed, whose writes record the origin `memory`: for tests
  /// and previews.
  ///
  /// Not a mock: it keeps the file's contract, result for result and error for error. It
  /// validates usernames and origins by the same rules, skips no-op writes (a name that
  /// differs only in its Unicode normalization is the same name), numbers entries with
  /// cursors that never repeat, keeps times to the millisecond as the file does, serves
  /// `.now`, `.beginning`, `.after(cursor)`, `.afterEntry(cursor, time:)`,
  /// snapshot-then-changes and values alike, compacts by count, cursor or age with the same
  /// ``CompactionResult``, and raises the same `FeedError`s. A differential test applies
  /// random sequences of every operation to a store in memory and to a file and compares
  /// every result.
  ///
  /// What it cannot do: another process or the sqlite3 shell cannot change it, so it never
  /// records the origin `external`; it has no ``file``.
  public static func inMemory(
    state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date())
  ) -> SessionStore {
    SessionStore(backend: MemoryBackend(state: state, origin: "memory"))
  }

  /// A store in memory, as ``inMemory(state:)``, whose writes record `origin`.
  /// - Throws: `invalidOrigin` for an origin ``init(path:options:)`` refuses too: empty,
  ///   longer than 64 characters, holding a control character, or `external`.
  public static func inMemory(
    state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date()), origin: String
  ) throws -> SessionStore {
    try Origin.validate(origin)
    return SessionStore(backend: MemoryBackend(state: state, origin: origin))
  }
}

/// The in-memory backend of ``SessionStore``: a log under a lock, and a beacon for its
/// subscribers.
final class MemoryBackend: SessionBackend {
  /// The origin recorded on this store's writes.
  let origin: String
  private let log: MemoryLog
  private let beacon = Beacon()
  let feed: Feed<SessionChange, SessionState>

  init(state: SessionState, origin: String) {
    self.origin = origin
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  var place: String { "memory" }

  /// Never: a store in memory is always writable.
  var isReadOnly: Bool { false }

  /// None: memory has no schema.
  var appliedMigrations: [Migration] { [] }

  func currentState() -> SessionState { log.current.withLock { $0.state } }

  /// Sets the state without an entry, as no write can: for the test that `check()` reads
  /// what is there.
  func replaceState(_ state: SessionState) { log.current.withLock { $0.state = state } }

  /// None: a write never waits, and runs on its caller's task.
  var writeQueue: DispatchQueue? { nil }

  /// Applies `write` under the log's lock; nothing here can wait, so `isCancelled` is not
  /// asked (the shared `async` writes check the task before they start).
  func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
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

  func delete(_ deletion: Deletion) -> CompactionResult {
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

extension MemoryBackend {
  /// The verifications that apply to memory, on one consistent view of the log: the state
  /// is the newest entry's "after", cursors follow one another up to the head, lie between
  /// 1 and the largest integer, and the username meets the rules.
  func check() -> [CheckResult] {
    let contents = log.current.withLock { $0 }
    let entries = contents.entries
    return [
      .running(.state) {
        guard let newest = entries.last, newest.cursor == contents.head else {
          return (true, "no kept change to compare with")
        }
        return (newest.change.after == contents.state, "the state is the one the newest change left")
      },
      .running(.continuity) {
        let holes = zip(entries, entries.dropFirst()).filter { $0.1.cursor.value != $0.0.cursor.value + 1 }
        let ahead = entries.last.map { $0.cursor > contents.head } ?? false
        return (holes.isEmpty && !ahead, "\(entries.count) entries up to head \(contents.head), no hole")
      },
      .running(.cursors) {
        let low = entries.first.map { $0.cursor.value < 1 } ?? false
        return (!low && contents.head.next != nil, "every cursor is at least 1 and below the largest integer")
      },
      .running(.username) {
        guard let name = contents.state.username else { return (true, "no username") }
        return (try Username.validated(name) == name, "username is valid")
      },
    ]
  }
}

/// The in-memory log behind ``MemoryBackend``.
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
