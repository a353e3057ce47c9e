import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// One contract, two stores: `InMemorySessionStore` must behave like `SessionStore`.
@Suite(.timeLimit(.minutes(1))) struct RepositoryContractTests {
  /// A store under test, with the one maintenance call the contract needs.
  struct Subject: Sendable {
    let repository: any SessionRepository
    let compact: @Sendable (Int) throws -> Void
    let keep: TemporaryDirectory?
  }

  enum Kind: String, CaseIterable, Sendable {
    case sqlite, memory

    func make() throws -> Subject {
      switch self {
      case .sqlite:
        let dir = try TemporaryDirectory()
        let store = try SessionStore(path: dir.file("session.db"), options: .init(origin: "contract"))
        return Subject(repository: store, compact: { _ = try store.compact(keepingLast: $0) }, keep: dir)
      case .memory:
        let store = InMemorySessionStore(origin: "contract")
        return Subject(repository: store, compact: { store.compact(keepingLast: $0) }, keep: nil)
      }
    }
  }

  @Test(arguments: Kind.allCases)
  func writesReturnTheirChangeAndNoOpsReturnNil(_ kind: Kind) throws {
    let subject = try kind.make()
    let store = subject.repository
    #expect(try store.state.username == nil)
    #expect(try store.state.isLoggedIn == false)
    let login = try #require(try store.login(username: "alice"))
    #expect(login.cursor == Cursor(1))
    #expect(login.origin == "contract")
    #expect(login.events == [.usernameChanged(from: nil, to: "alice"), .loggedIn(username: "alice")])
    #expect(try store.login(username: "alice") == nil)
    let rename = try #require(try store.rename(to: "bob"))
    #expect(rename.events == [.usernameChanged(from: "alice", to: "bob")])
    #expect(rename.after.isLoggedIn)
    #expect(try store.rename(to: "bob") == nil)
    let logout = try #require(try store.logout())
    #expect(logout.events == [.loggedOut(username: "bob")])
    #expect(logout.after.username == "bob", "logout keeps the username")
    #expect(try store.logout() == nil)
    let switchUser = try #require(try store.login(username: "carol"))
    #expect(switchUser.events == [.usernameChanged(from: "bob", to: "carol"), .loggedIn(username: "carol")])
    #expect(try store.history(from: .beginning, limit: 10).map(\.cursor.rawValue) == [1, 2, 3, 4])
    #expect(store.username == "carol")
    #expect(store.isLoggedIn)
  }

  @Test(arguments: Kind.allCases)
  func invalidUsernamesAreRefusedTheSameWay(_ kind: Kind) throws {
    let subject = try kind.make()
    let store = subject.repository
    for name in ["", " x", "a\nb", String(repeating: "n", count: 257)] {
      #expect(throws: SessionStorageError.self) { try store.login(username: name) }
    }
    #expect(try store.history(from: .beginning, limit: 10).isEmpty)
    try store.login(username: "Jose\u{301}")
    #expect(try store.login(username: "Jos\u{E9}") == nil)
  }

  @Test(arguments: Kind.allCases)
  func subscriptionsResumeExactlyAfterTheirCursor(_ kind: Kind) async throws {
    let subject = try kind.make()
    let store = subject.repository
    try store.login(username: "a")
    let second = try #require(try store.logout())
    let fromNow = try store.changes(from: .now)
    let fromCursor = try store.changes(from: .after(second.cursor))
    let fromStart = try store.changes(from: .beginning)
    try store.login(username: "b")
    try store.rename(to: "c")
    #expect(try await first(2, of: fromNow).map(\.cursor.rawValue) == [3, 4])
    #expect(try await first(2, of: fromCursor).map(\.cursor.rawValue) == [3, 4])
    #expect(try await first(4, of: fromStart).map(\.cursor.rawValue) == [1, 2, 3, 4])
    #expect(throws: FeedError.cursorAhead(requested: Cursor(9), head: Cursor(4))) {
      try store.changes(from: .after(Cursor(9)))
    }
  }

  @Test(arguments: Kind.allCases)
  func snapshotThenChangesHasNoGap(_ kind: Kind) async throws {
    let subject = try kind.make()
    let store = subject.repository
    try store.login(username: "a")
    let start = try store.snapshotAndChanges()
    #expect(start.cursor == Cursor(1))
    #expect(start.state.username == "a")
    try store.logout()
    let next = try await first(1, of: start.changes)
    #expect(next.map(\.cursor) == [Cursor(2)])
    #expect(next.first?.before.isLoggedIn == start.state.isLoggedIn)
  }

  @Test(arguments: Kind.allCases)
  func valuesBeginWithTheCurrentState(_ kind: Kind) async throws {
    let subject = try kind.make()
    let store = subject.repository
    try store.login(username: "a")
    var values = store.values().makeAsyncIterator()
    #expect(try await values.next()?.username == "a")
    try store.rename(to: "b")
    #expect(try await values.next()?.username == "b")
  }

  @Test(arguments: Kind.allCases)
  func compactionRaisesCursorCompactedAndNeverReusesCursors(_ kind: Kind) async throws {
    let subject = try kind.make()
    let store = subject.repository
    for name in ["a", "b", "c", "d"] { try store.rename(to: name) }
    try subject.compact(1)
    #expect(throws: FeedError.cursorCompacted(requested: Cursor(1), oldestAvailable: Cursor(4))) {
      try store.changes(from: .after(Cursor(1)))
    }
    try subject.compact(0)
    #expect(try store.history(from: .beginning, limit: 10).isEmpty)
    #expect(try store.rename(to: "e")?.cursor == Cursor(5))
  }
}
