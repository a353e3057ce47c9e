import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A change that alters only the bytes of a username (another Unicode
/// normalization of the same name, or the same text stored as a BLOB) is no change to Swift,
/// whose `String` equality is canonical equivalence. A library write that would make only
/// such a change is a no-op in both stores; such a change by another client reaches
/// subscribers as an entry with no events.
@Suite(.timeLimit(.minutes(10))) struct BytesOnlyChangeTests {
  static let composed = "Jos\u{E9}"
  static let decomposed = "Jose\u{301}"

  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// The stored username's type and bytes, as the sqlite3 shell shows them.
  func stored() async throws -> String {
    try await ProcessRunner.sqlite3(path, "SELECT typeof(username) || ' ' || hex(username) FROM session")
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  @Test(arguments: [
    // The shell stores the decomposed "José" (U+0301 is CC 81 in UTF-8)…
    ("'Jose' || char(769)", "text 4A6F7365CC81"),
    // … or the composed one as a BLOB (U+00E9 is C3 A9).
    ("CAST('Jos' || char(233) AS BLOB)", "blob 4A6F73C3A9"),
  ])
  func aLibraryWriteThatWouldChangeOnlyTheBytesIsANoOp(_ value: String, _ bytes: String) async throws {
    let store = try SessionStore(path: path, options: .init(origin: "app"))
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = \(value), is_logged_in = 1")
    #expect(try await stored() == bytes)
    for name in [Self.composed, Self.decomposed] {
      #expect(try synchronously { try store.blocking.logIn(as: name) } == nil)
      #expect(try await store.logIn(as: name) == nil)
      #expect(try synchronously { try store.blocking.rename(to: name) } == nil)
      #expect(try await store.rename(to: name) == nil)
    }
    #expect(try await stored() == bytes, "nothing was written")
    #expect(try store.history().map(\.origin) == ["external"], "no entry but the shell's")
    #expect(try store.bounds().head == Cursor(1), "no cursor was used up")
    #expect(try store.state.username == Self.composed)

    // Signed out, logging in is a plain login, which stores the name in NFC.
    let logout = try #require(try synchronously { try store.blocking.logOut() })
    #expect(logout.events == [.loggedOut(username: Self.composed)])
    let login = try #require(try await store.logIn(as: Self.decomposed))
    #expect(login.events == [.loggedIn(username: Self.composed)])
    #expect(login.cursor == Cursor(3))
    #expect(try await stored() == "text 4A6F73C3A9")
  }

  @Test func theInMemoryStoreAgrees() async throws {
    let state = SessionState(username: Self.decomposed, isLoggedIn: true, updatedAt: Date())
    let store = try SessionStore.inMemory(state: state, origin: "app")
    for name in [Self.composed, Self.decomposed] {
      #expect(try synchronously { try store.blocking.logIn(as: name) } == nil)
      #expect(try await store.logIn(as: name) == nil)
      #expect(try synchronously { try store.blocking.rename(to: name) } == nil)
      #expect(try await store.rename(to: name) == nil)
    }
    #expect(try store.history().isEmpty)
    #expect(
      try store.state.username.map { Array($0.unicodeScalars) } == Array(Self.decomposed.unicodeScalars))
    let logout = try #require(try synchronously { try store.blocking.logOut() })
    #expect(logout.events == [.loggedOut(username: Self.composed)])
    let login = try #require(try await store.logIn(as: Self.decomposed))
    #expect(login.events == [.loggedIn(username: Self.composed)])
    #expect(login.cursor == Cursor(2))
    #expect(try store.state.username.map { Array($0.unicodeScalars) } == Array(Self.composed.unicodeScalars))
  }

  @Test(arguments: ["'Jose' || char(769)", "CAST(username AS BLOB)"])
  func aChangeOfOnlyTheBytesByAnotherClientIsAnEntryWithNoEvents(_ value: String) async throws {
    let store = try SessionStore(path: path, options: .init(origin: "app"))
    let login = try #require(try await store.logIn(as: Self.composed))
    let changes = try store.changes(from: .after(login.cursor))
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = \(value)")
    let entry = try #require(try await first(1, of: changes).first)
    #expect(entry.cursor == Cursor(2))
    #expect(entry.origin == "external")
    #expect(entry.events.isEmpty)
    #expect(entry.change.description == "(no event)")
    #expect(entry.before.username == entry.after.username, "the same name to Swift")
    #expect(entry.before == entry.after.with(updatedAt: entry.before.updatedAt))
  }

  /// `check` compares the stored bytes with their NFC form: Swift's `==` would call the
  /// decomposed "José" the same as the composed one and never report it.
  @Test func checkReportsAUsernameTheShellStoredDecomposed() async throws {
    let store = try SessionStore(path: path, options: .init(origin: "app"))
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'Jose' || char(769)")
    let username = try #require(try store.check().first { $0.check == .username })
    #expect(username.verdict == .failed)
    #expect(username.detail.contains("is not in Unicode NFC"), "\(username.detail)")
  }
}

/// Runs `body` in a synchronous context, where a store's synchronous write is the one called.
func synchronously<Result>(_ body: () throws -> Result) rethrows -> Result { try body() }

extension SessionState {
  /// The state with another time.
  fileprivate func with(updatedAt: Date) -> SessionState {
    var state = self
    state.updatedAt = updatedAt
    return state
  }
}
