import Foundation
import SessionStorage
import SessionStoragePostgres
import SessionViewModels
import Synchronization
import SystemKit
import TestSupport
import Testing

/// View models receive their session through the initializer and follow the feed while
/// `follow()` runs. Tests wait for what a view model shows with `waitUntil`, never by sleeping.
@MainActor
// One test at a time: the view models run on the main actor, which every test of the suite
// shares, and a test that starts a thousand of them must not starve another's waits. The
// time limit is a hang guard.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ViewModelTests {
  /// The two-line conformance the narrow protocol makes possible.
  struct FixedSession: SessionProviding {
    var username: String? = "mark"
    var isLoggedIn = true
  }

  @Test func greetingNeedsOnlyATwoLineStruct() {
    #expect(GreetingViewModel(session: FixedSession()).greeting == "Hello, mark")
    #expect(GreetingViewModel(session: FixedSession(isLoggedIn: false)).greeting == "Signed out")
    #expect(GreetingViewModel(session: FixedSession(username: nil)).greeting == "Hello!")
  }

  @Test func greetingReadsAnInMemoryStore() throws {
    let store = SessionStore.inMemory()
    try store.blocking.logIn(as: "ada")
    #expect(try GreetingViewModel(session: store.state).greeting == "Hello, ada")
  }

  /// The stores a view model can be handed; the view models cannot tell them apart.
  enum Store: String, CaseIterable, Sendable {
    case memory, sqlite, postgres

    /// A new, empty store of this kind (and what keeps its file alive).
    func make() async throws -> (any SessionRepository, TemporaryDirectory?) {
      switch self {
      case .memory: return (SessionStore.inMemory(), nil)
      case .sqlite:
        let dir = try TemporaryDirectory()
        return (try SessionStore(path: dir.file("session.db")), dir)
      case .postgres:
        return (try await SessionStore(postgresURL: PostgresCluster.shared().freshStoreURL()), nil)
      }
    }
  }

  /// Runs `body` while `model.follow()` runs in a task of its own, as SwiftUI's `.task` runs
  /// it; then cancels the task and waits for `follow()` to return.
  func whileFollowing(_ model: some FollowingViewModel, _ body: () async throws -> Void) async throws {
    let following = Task { await model.follow() }
    do {
      try await body()
    } catch {
      following.cancel()
      await following.value
      throw error
    }
    following.cancel()
    await following.value
  }

  @Test(arguments: Store.allCases)
  func profileFollowsRenamesAndSignsOut(_ kind: Store) async throws {
    let (store, dir) = try await kind.make()
    defer { withExtendedLifetime(dir) {} }
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      try await store.rename(to: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" }
      await model.logOut()
      try await model.waitUntil { $0.greeting == "Signed out" && !$0.isLoggedIn }
      #expect(try store.state.isLoggedIn == false)
      #expect(model.writeError == nil)
      #expect(model.readError == nil)
      #expect(model.phase == .following)
    }
  }

  @Test func profileFollowsEveryKindOfWriterOnARealFile() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(origin: "app"))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }

      try await store.rename(to: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" && $0.lastChange?.origin == "app" }

      let other = try SessionStore(path: path, options: .init(origin: "other"))
      try await other.rename(to: "carol")
      try await model.waitUntil { $0.greeting == "Hello, carol" && $0.lastChange?.origin == "other" }

      try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'dave'")
      try await model.waitUntil { $0.greeting == "Hello, dave" && $0.lastChange?.origin == "external" }

      await model.logOut()
      try await model.waitUntil { !$0.isLoggedIn && $0.greeting == "Signed out" }
      let last = try #require(try store.history(from: .beginning, limit: 10).last)
      #expect(last.events == [.loggedOut(username: "dave")])
      try await model.waitUntil { $0.lastChange?.cursor == last.cursor }
      #expect(model.lastChange?.time == last.time)
    }
  }

  /// The same view models, handed a PostgreSQL store: they follow a change made in `psql`.
  @Test func profileAndGreetingFollowAPsqlUpdateOnPostgres() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "app"))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      #expect(GreetingViewModel(session: try store.state).greeting == "Hello, alice")

      _ = try await cluster.psql(
        "UPDATE session SET username = 'dave'", schema: store.requirePostgres().schema)
      try await model.waitUntil { $0.greeting == "Hello, dave" && $0.lastChange?.origin == "external" }
      #expect(GreetingViewModel(session: try store.state).greeting == "Hello, dave")

      await model.logOut()
      try await model.waitUntil { !$0.isLoggedIn && $0.greeting == "Signed out" }
    }
    let last = try #require(try store.history(from: .beginning, limit: 10).last)
    #expect(last.events == [.loggedOut(username: "dave")])
    #expect(try store.history(from: .beginning, limit: 10).map(\.origin) == ["app", "external", "app"])
  }
}

/// A view model whose `follow()` a test runs while it acts (``ViewModelTests/whileFollowing(_:_:)``).
@MainActor protocol FollowingViewModel: AnyObject {
  func follow() async
}

extension ProfileViewModel: FollowingViewModel {}
extension AccountsViewModel: FollowingViewModel {}
