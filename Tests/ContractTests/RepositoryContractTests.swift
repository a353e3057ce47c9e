import FeedKit
import Foundation
import SessionStoragePostgres
import TestSupport
import Testing

@testable import SessionStorage

/// One contract, three backends: a store in memory and a store on PostgreSQL must behave
/// like a store on a SQLite file. The PostgreSQL case runs against `PostgresCluster.shared()`,
/// in a fresh schema per test. A target of its own: it is the one suite of the library that
/// needs both backends' modules and a server.
@Suite(.timeLimit(.minutes(10))) struct RepositoryContractTests {
  /// A store under test, with the maintenance calls the contract needs.
  struct Subject: Sendable {
    let repository: any SessionRepository
    let compact: @Sendable (Int) throws -> CompactionResult
    let compactBefore: @Sendable (Cursor) throws -> CompactionResult
    let keep: TemporaryDirectory?
  }

  enum Kind: String, CaseIterable, Sendable {
    case sqlite, memory, postgres

    func make(origin: String = "contract") async throws -> Subject {
      switch self {
      case .sqlite:
        let dir = try TemporaryDirectory()
        let store = try SessionStore(path: dir.file("session.db"), options: .init(origin: origin))
        return Subject(
          repository: store, compact: { try store.compact(keepingLast: $0) },
          compactBefore: { try store.compact(before: $0) }, keep: dir)
      case .memory:
        let store = try SessionStore.inMemory(origin: origin)
        return Subject(
          repository: store, compact: { try store.compact(keepingLast: $0) },
          compactBefore: { try store.compact(before: $0) }, keep: nil)
      case .postgres:
        let store = try SessionStore(
          postgresURL: try await PostgresCluster.shared().freshStoreURL(), options: .init(origin: origin))
        return Subject(
          repository: store, compact: { try store.compact(keepingLast: $0) },
          compactBefore: { try store.compact(before: $0) }, keep: nil)
      }
    }
  }

  @Test(arguments: Kind.allCases)
  func writesReturnTheirChangeAndNoOpsReturnNil(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    #expect(try store.state.username == nil)
    #expect(try store.state.isLoggedIn == false)
    let login = try await #require(try store.logIn(as: "alice"))
    #expect(login.cursor == Cursor(1))
    #expect(login.origin == "contract")
    #expect(
      login.events == [
        .added(username: "alice"), .loggedIn(username: "alice"), .activated(username: "alice"),
      ])
    #expect(try await store.logIn(as: "alice") == nil)
    let rename = try await #require(try store.rename(to: "bob"))
    #expect(rename.events == [.usernameChanged(from: "alice", to: "bob")])
    #expect(rename.after.isLoggedIn)
    #expect(try await store.rename(to: "bob") == nil)
    let logout = try await #require(try store.logOut())
    #expect(logout.events == [.loggedOut(username: "bob")])
    #expect(logout.after.username == "bob", "logout keeps the username")
    #expect(try await store.logOut() == nil)
    let switchUser = try await #require(try store.logIn(as: "carol"))
    #expect(
      switchUser.events == [
        .added(username: "carol"), .loggedIn(username: "carol"), .activated(username: "carol"),
      ])
    #expect(try store.history(from: .beginning, limit: 10).map(\.cursor.value) == [1, 2, 3, 4])
    #expect(try store.state.username == "carol")
    #expect(try store.state.isLoggedIn)
  }

  @Test(arguments: Kind.allCases)
  func invalidUsernamesAreRefusedTheSameWay(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    for name in ["", " x", "a\nb", String(repeating: "n", count: 257)] {
      await #expect(throws: SessionStorageError.self) { try await store.logIn(as: name) }
    }
    #expect(try store.history(from: .beginning, limit: 10).isEmpty)
    try await store.logIn(as: "Jose\u{301}")
    #expect(try await store.logIn(as: "Jos\u{E9}") == nil)
  }

  @Test(arguments: Kind.allCases)
  func subscriptionsResumeExactlyAfterTheirCursor(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    try await store.logIn(as: "a")
    let second = try await #require(try store.logOut())
    let fromNow = try store.changes(from: .now)
    let fromCursor = try store.changes(from: .after(second.cursor))
    let fromStart = try store.changes(from: .beginning)
    try await store.logIn(as: "b")
    try await store.rename(to: "c")
    #expect(try await first(2, of: fromNow).map(\.cursor.value) == [3, 4])
    #expect(try await first(2, of: fromCursor).map(\.cursor.value) == [3, 4])
    #expect(try await first(4, of: fromStart).map(\.cursor.value) == [1, 2, 3, 4])
    #expect(throws: FeedError.cursorAhead(requested: Cursor(9), head: Cursor(4))) {
      try store.changes(from: .after(Cursor(9)))
    }
  }

  @Test(arguments: Kind.allCases)
  func snapshotThenChangesHasNoGap(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    try await store.logIn(as: "a")
    let start = try store.snapshotAndChanges()
    #expect(start.cursor == Cursor(1))
    #expect(start.state.username == "a")
    try await store.logOut()
    let next = try await first(1, of: start.changes)
    #expect(next.map(\.cursor) == [Cursor(2)])
    #expect(next.first?.before.isLoggedIn == start.state.isLoggedIn)
  }

  @Test(arguments: Kind.allCases)
  func valuesBeginWithTheCurrentState(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    try await store.logIn(as: "a")
    var values = store.values().makeAsyncIterator()
    #expect(try await values.next()?.username == "a")
    try await store.rename(to: "b")
    #expect(try await values.next()?.username == "b")
  }

  @Test(arguments: Kind.allCases)
  func compactionRaisesCursorCompactedAndNeverReusesCursors(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    for name in ["a", "b", "c", "d"] { try await store.rename(to: name) }
    _ = try subject.compact(1)
    #expect(throws: FeedError.cursorCompacted(requested: Cursor(1), oldestAvailable: Cursor(4))) {
      try store.changes(from: .after(Cursor(1)))
    }
    _ = try subject.compact(0)
    #expect(try store.history(from: .beginning, limit: 10).isEmpty)
    #expect(try await store.rename(to: "e")?.cursor == Cursor(5))
  }

  @Test(arguments: Kind.allCases)
  func compactionsReturnWhatTheyRemoved(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    for name in ["a", "b", "c", "d"] { try await store.rename(to: name) }
    #expect(
      try subject.compact(2) == .init(removed: 2, bounds: FeedBounds(oldest: Cursor(3), head: Cursor(4))))
    #expect(
      try subject.compact(.max) == .init(removed: 0, bounds: FeedBounds(oldest: Cursor(3), head: Cursor(4))))
    #expect(
      try subject.compactBefore(Cursor(4))
        == .init(removed: 1, bounds: FeedBounds(oldest: Cursor(4), head: Cursor(4))))
    #expect(throws: FeedError.cursorAhead(requested: Cursor(6), head: Cursor(4))) {
      try subject.compactBefore(Cursor(6))
    }
    #expect(
      try subject.compactBefore(Cursor(-1))
        == .init(removed: 0, bounds: FeedBounds(oldest: Cursor(4), head: Cursor(4))))
    #expect(
      try subject.compactBefore(Cursor(5))
        == .init(removed: 1, bounds: FeedBounds(oldest: nil, head: Cursor(4))))
    #expect(try await store.rename(to: "e")?.cursor == Cursor(5))
  }

  /// A negative limit or count is refused on every store: never a trap (`prefix` with a
  /// negative count) and never a compaction that empties the feed.
  @Test(arguments: Kind.allCases)
  func negativeLimitsAndCountsAreInvalidArguments(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    try await store.logIn(as: "a")
    for limit in [-1, Int.min] {
      #expect(code(of: { try store.history(from: .beginning, limit: limit) }) == .invalidArgument)
    }
    for count in [-1, Int.min] {
      #expect(code(of: { try subject.compact(count) }) == .invalidArgument)
    }
    #expect(try store.history(from: .beginning, limit: 10).count == 1, "nothing was removed")
  }

  @Test(arguments: ["", "external", String(repeating: "o", count: 65), "new\nline", "nul\u{0}"])
  func bothStoresRefuseTheSameOrigins(_ origin: String) async throws {
    var messages: [String?] = []
    for kind in Kind.allCases {
      let error = await #expect(throws: SessionStorageError.self) { try await kind.make(origin: origin) }
      #expect(error?.code == .invalidOrigin)
      messages.append(error?.message)
    }
    #expect(messages[0] == messages[1])
  }

  @Test(arguments: Kind.allCases)
  func originsUpTo64CharactersAreAccepted(_ kind: Kind) async throws {
    let origin = String(repeating: "🧪", count: 64)
    let subject = try await kind.make(origin: origin)
    let store = subject.repository
    #expect(try await store.logIn(as: "a")?.origin == origin)
  }

  /// A read-only store refuses every write with `readOnly`, also from a cancelled task: the
  /// refusal says why nothing can be written, whatever the task. (A store in memory is
  /// always writable.)
  @Test(arguments: [Kind.sqlite, .postgres])
  func aReadOnlyStoreRefusesWritesAlsoFromACancelledTask(_ kind: Kind) async throws {
    let directory = try TemporaryDirectory()
    let store: any SessionRepository
    switch kind {
    case .sqlite, .memory:
      let path = directory.file("session.db")
      _ = try SessionStore(path: path)
      store = try SessionStore(path: path, options: .init(readOnly: true))
    case .postgres:
      let url = try await PostgresCluster.shared().freshStoreURL()
      _ = try SessionStore(postgresURL: url)
      store = try SessionStore(postgresURL: url, options: .init(readOnly: true))
    }
    for cancelled in [false, true] {
      let task = Task {
        if cancelled { withUnsafeCurrentTask { $0?.cancel() } }
        return try await store.logIn(as: "b")
      }
      let error = await #expect(throws: SessionStorageError.self) { try await task.value }
      #expect(error?.code == .readOnly, "cancelled: \(cancelled)")
    }
    #expect(try store.history(from: .beginning, limit: 10).isEmpty)
  }

  /// A write from a task cancelled before it starts writes nothing, on every store, no-op or
  /// not; the username is validated first.
  @Test(arguments: Kind.allCases)
  func anAsyncWriteFromACancelledTaskThrowsAndWritesNothing(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    try await store.logIn(as: "a")
    let writes: [@Sendable () async throws -> SessionEntry?] = [
      { try await store.logIn(as: "b") }, { try await store.rename(to: "b") }, { try await store.logOut() },
      { try await store.logIn(as: "a") },  // a no-op throws too
    ]
    for write in writes {
      let task = Task {
        withUnsafeCurrentTask { $0?.cancel() }
        return try await write()
      }
      await #expect(throws: CancellationError.self) { try await task.value }
    }
    let invalid = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await store.logIn(as: "")
    }
    await #expect(throws: SessionStorageError.self, "the name is validated first") { try await invalid.value }
    #expect(try store.history(from: .beginning, limit: 10).count == 1)
  }

  /// The file keeps times to the millisecond; memory keeps them alike.
  @Test(arguments: Kind.allCases)
  func timesAreOnAMillisecond(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = subject.repository
    func onMillisecond(_ date: Date) -> Bool { Timestamp.parse(Timestamp.format(date)) == date }
    #expect(onMillisecond(try store.state.updatedAt))
    let entry = try #require(try await store.logIn(as: "a"))
    #expect(onMillisecond(entry.time))
    #expect(onMillisecond(entry.before.updatedAt))
    #expect(entry.after.updatedAt == entry.time)
    #expect(try store.state.updatedAt == entry.time)
    #expect(try store.history(from: .beginning, limit: 1).first?.time == entry.time)
  }

  /// `check()` is every store's: after writes, a compaction and more writes it passes on
  /// every backend, and each runs at least the verifications every backend can make.
  @Test(arguments: Kind.allCases)
  func checkPassesAfterWritesAndCompaction(_ kind: Kind) async throws {
    let subject = try await kind.make()
    let store = try #require(subject.repository as? SessionStore)
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    try await store.logOut()
    try store.compact(keepingLast: 1)
    try await store.logIn(as: "carol")
    let results = try store.check()
    #expect(results.filter { $0.verdict == .failed }.isEmpty, "\(results)")
    #expect(Set(results.map(\.check)).isSuperset(of: [.state, .continuity, .cursors, .username]))
    withExtendedLifetime(subject) {}
  }

  /// A store in memory whose state is not what its newest entry left fails `check()`'s
  /// state verification: the check reads what is there, it does not assume it.
  @Test func checkInMemoryFindsAStateTheFeedDidNotLeave() async throws {
    let store = SessionStore.inMemory()
    try await store.logIn(as: "alice")
    let memory = try #require(store.backend as? MemoryBackend)
    memory.replaceState(SessionState(username: "mallory", isLoggedIn: true, updatedAt: Date()))
    let state = try #require(try store.check().first { $0.check == .state })
    #expect(state.verdict == .failed, "\(state)")
  }

  @Test func aPreviewStoreRoundsTheTimeItIsGiven() throws {
    let state = SessionState(username: "a", isLoggedIn: true, updatedAt: Date(timeIntervalSince1970: 1.23456))
    #expect(try SessionStore.inMemory(state: state).state.updatedAt == Date(timeIntervalSince1970: 1.235))
    #expect(SessionStore.inMemory(state: state).backend.origin == "memory")
  }
}

/// The code of the `SessionStorageError` that `body` throws, or nil.
private func code(of body: () throws -> some Any) -> SessionStorageError.Code? {
  do {
    _ = try body()
    return nil
  } catch {
    return (error as? SessionStorageError)?.code
  }
}
