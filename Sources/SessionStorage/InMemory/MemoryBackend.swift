import Dispatch
import Synchronization
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension SessionStore {
  /// A store in this process's memory with an empty feed, whose writes record the origin
  /// `memory`: for tests and previews. A `state` with a username makes a roster of one
  /// account (identifier 1), active, in that state; one without a username, an empty roster
  /// (signed out, whatever its `isLoggedIn` says). Its time is rounded to the millisecond.
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

  func currentState() -> SessionState { log.current.withLock { $0.roster.state } }

  func roster() -> SessionRoster { log.current.withLock { $0.roster } }

  /// Sets the active account's state without an entry, as no write can: for the test that
  /// `check()` reads what is there.
  func replaceState(_ state: SessionState) {
    log.current.withLock { log in
      guard let index = log.roster.accounts.firstIndex(where: { $0.id == log.roster.activeID }) else {
        return
      }
      log.roster.accounts[index].username = state.username ?? ""
      log.roster.accounts[index].isLoggedIn = state.isLoggedIn
    }
  }

  /// None: a write never waits, and runs on its caller's task.
  var writeQueue: DispatchQueue? { nil }

  /// Plans `write` and applies it under the log's lock; nothing here can wait, so
  /// `isCancelled` is not asked (the shared `async` writes check the task before they start).
  func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let outcome = try log.current.withLock { log throws -> WriteOutcome in
      let planned = try write.plan(on: log)
      guard !planned.isEmpty else {
        return .unchanged(SessionSnapshot(state: log.roster.state, cursor: log.roster.cursor))
      }
      guard Int64.max - log.roster.cursor.value >= planned.count else {
        throw SessionStorageError(
          .cursorsExhausted,
          "the feed's cursor reached the largest integer (\(log.roster.cursor)); no change can follow")
      }
      let now = Timestamp.rounded(Date())  // to the millisecond, as the file keeps times
      var entries: [SessionEntry] = []
      for plan in planned {
        let id = plan.account ?? log.nextID
        if plan.account == nil { log.nextID = AccountID(id.value + 1) }
        let cursor = Cursor(log.roster.cursor.value + 1)
        let entry = SessionEntry(
          cursor: cursor, time: now, origin: origin, change: plan.change(account: id, at: now))
        log.roster = log.roster.applying(entry)
        entries.append(entry)
      }
      log.entries.append(contentsOf: entries)
      return .committed(entries)
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
        removed: removed, bounds: FeedBounds(oldest: log.entries.first?.cursor, head: log.roster.cursor))
    }
  }
}

extension MemoryBackend {
  /// The verifications that apply to memory, on one consistent view of the log: each
  /// account's state is the one its newest kept change left, cursors follow one another up
  /// to the head, lie between 1 and the largest integer, and the usernames meet the rules.
  func check() -> [CheckResult] {
    let contents = log.current.withLock { $0 }
    let entries = contents.entries
    let roster = contents.roster
    return [
      .running(.state) {
        let differing = roster.accounts.filter { account in
          guard let newest = entries.last(where: { $0.change.account == account.id }) else { return false }
          return newest.change.after != account.state
        }
        return (
          differing.isEmpty,
          differing.isEmpty
            ? "every account is in the state its newest kept change left"
            : "\(differing.map { "'\($0.username.escapedForTerminal)'" }.joined(separator: ", ")) not in the state "
              + "the newest change left"
        )
      },
      .running(.continuity) {
        let holes = zip(entries, entries.dropFirst()).filter { $0.1.cursor.value != $0.0.cursor.value + 1 }
        let ahead = entries.last.map { $0.cursor > roster.cursor } ?? false
        return (holes.isEmpty && !ahead, "\(entries.count) entries up to head \(roster.cursor), no hole")
      },
      .running(.cursors) {
        let low = entries.first.map { $0.cursor.value < 1 } ?? false
        return (!low && roster.cursor.next != nil, "every cursor is at least 1 and below the largest integer")
      },
      .running(.username) {
        let invalid = roster.accounts.filter { (try? Username.validated($0.username)) != $0.username }
        return (
          invalid.isEmpty,
          invalid.isEmpty ? "\(roster.accounts.count) valid usernames" : "\(invalid.count) invalid usernames"
        )
      },
    ]
  }
}

/// The in-memory log behind ``MemoryBackend``.
final class MemoryLog: FeedSource {
  struct Contents: RosterReading {
    var roster: SessionRoster
    var entries: [SessionEntry] = []
    /// The identifier the next new account gets.
    var nextID: AccountID

    func head() -> Cursor { roster.cursor }
    func activeAccount() -> Account? { roster.active }
    func account(named username: String) -> Account? { roster.account(named: username) }
    func accountCount() -> Int { roster.accounts.count }
    func signedIn() -> [Account] { roster.accounts.filter(\.isLoggedIn) }
  }

  let current: Mutex<Contents>

  /// A log holding `state` (see ``SessionStore/inMemory(state:)``), its time rounded to the
  /// millisecond as the file keeps times.
  init(state: SessionState) {
    let time = Timestamp.rounded(state.updatedAt)
    let accounts = state.username.map {
      [Account(id: AccountID(1), username: $0, isLoggedIn: state.isLoggedIn, updatedAt: time, cursor: .zero)]
    }
    current = Mutex(
      Contents(
        roster: SessionRoster(
          accounts: accounts ?? [], activeID: accounts.map { _ in AccountID(1) }, activeSince: time,
          cursor: .zero),
        nextID: AccountID(accounts == nil ? 1 : 2)))
  }

  func entries(after cursor: Cursor, limit: Int) -> [SessionEntry] {
    current.withLock { log in
      let start = log.entries.firstIndex { $0.cursor > cursor } ?? log.entries.endIndex
      return Array(log.entries[start...].prefix(limit))
    }
  }

  func bounds() -> FeedBounds {
    current.withLock { FeedBounds(oldest: $0.entries.first?.cursor, head: $0.roster.cursor) }
  }

  func snapshot() -> (state: SessionState, cursor: Cursor, last: SessionEntry?) {
    current.withLock { log in
      (
        log.roster.state, log.roster.cursor,
        log.entries.last.flatMap { $0.cursor == log.roster.cursor ? $0 : nil }
      )
    }
  }
}
