import Foundation
import SessionStorage
import SessionStoragePostgres
import SessionViewModels
import SystemKit
import TestSupport
import Testing

/// View models receive their session through the initializer and follow the feed.
@MainActor
// A hang guard: these tests share the main actor, which a loaded machine runs slowly.
@Suite(.timeLimit(.minutes(10))) struct ViewModelTests {
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
    let store = InMemorySessionStore()
    try store.blocking.logIn(as: "ada")
    #expect(GreetingViewModel(session: try store.state).greeting == "Hello, ada")
  }

  /// The stores a view model can be handed; the view models cannot tell them apart.
  enum Store: String, CaseIterable, Sendable {
    case memory, sqlite, postgres

    /// A new, empty store of this kind (and what keeps its file alive).
    func make() async throws -> (any SessionRepository, TemporaryDirectory?) {
      switch self {
      case .memory: return (InMemorySessionStore(), nil)
      case .sqlite:
        let dir = try TemporaryDirectory()
        return (try SessionStore(path: dir.file("session.db")), dir)
      case .postgres:
        return (try await PostgresSessionStore(url: PostgresCluster.shared().freshStoreURL()), nil)
      }
    }
  }

  @Test(arguments: Store.allCases)
  func profileFollowsRenamesAndSignsOut(_ kind: Store) async throws {
    let (store, dir) = try await kind.make()
    defer { withExtendedLifetime(dir) {} }
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")
    try await store.rename(to: "bob")
    #expect(await eventually { model.greeting == "Hello, bob" })
    await model.logOut()
    #expect(await eventually { model.greeting == "Signed out" && !model.isLoggedIn })
    #expect(try store.state.isLoggedIn == false)
    #expect(model.writeError == nil)
    #expect(model.readError == nil)
  }

  @Test func profileFollowsEveryKindOfWriterOnARealFile() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")

    try await store.rename(to: "bob")
    #expect(await eventually { model.greeting == "Hello, bob" }, "a rename through the injected store")

    let other = try SessionStore(path: path, options: .init(origin: "other"))
    try await other.rename(to: "carol")
    #expect(await eventually { model.greeting == "Hello, carol" }, "a write from another store on the file")

    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'dave'")
    #expect(await eventually { model.greeting == "Hello, dave" }, "an UPDATE made with the sqlite3 shell")

    await model.logOut()
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
    #expect(try store.history(from: .beginning, limit: 10).last?.events == [.loggedOut(username: "dave")])
  }

  /// The same view models, handed a PostgreSQL store: they follow a change made in `psql`.
  @Test func profileAndGreetingFollowAPsqlUpdateOnPostgres() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try PostgresSessionStore(url: cluster.freshStoreURL(), options: .init(origin: "app"))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")
    #expect(GreetingViewModel(session: try store.state).greeting == "Hello, alice")

    _ = try await cluster.psql("UPDATE session SET username = 'dave'", schema: store.schema)
    #expect(await eventually { model.greeting == "Hello, dave" }, "an UPDATE made with psql")
    #expect(GreetingViewModel(session: try store.state).greeting == "Hello, dave")

    await model.logOut()
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
    let last = try #require(try store.history(from: .beginning, limit: 10).last)
    #expect(last.events == [.loggedOut(username: "dave")])
    #expect(try store.history(from: .beginning, limit: 10).map(\.origin) == ["app", "external", "app"])
  }

  @Test func releasingAProfileEndsItsSubscription() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    try await store.logIn(as: "alice")
    let watching = { openFileDescriptors(for: dir.path).contains("anon_inode:inotify") }
    var model: ProfileViewModel? = ProfileViewModel(session: store)
    weak let released = model
    #expect(await eventually { watching() }, "the view model subscribed")
    model = nil
    #expect(released == nil)
    #expect(await eventually { !watching() }, "its subscription ended and closed its watcher")
  }

  @Test func releasingAProfileEndsItsListenConnectionOnPostgres() async throws {
    let cluster = try await PostgresCluster.shared()
    let origin = "release-\(UInt32.random(in: 0...UInt32.max))"
    let store = try PostgresSessionStore(url: cluster.freshStoreURL(), options: .init(origin: origin))
    try await store.logIn(as: "alice")
    let listening = {
      try await cluster.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(origin)/listener'")
        == "1\n"
    }
    var model: ProfileViewModel? = ProfileViewModel(session: store)
    weak let released = model
    #expect(try await eventually { try await listening() }, "the view model subscribed")
    model = nil
    #expect(released == nil)
    #expect(
      try await eventually { try await !listening() },
      "its subscription ended and closed the LISTEN connection")
  }

  /// A `psql` transaction holds the session row while the view model signs out on
  /// PostgreSQL: the main actor keeps running, and the sign-out completes after it.
  @Test func signingOutWhileAPsqlTransactionHoldsTheRowLeavesTheMainActorFree() async throws {
    let cluster = try await PostgresCluster.shared()
    // No lock timeout: the sign-out waits for as long as psql holds the row, however long a
    // loaded machine takes to get to the cancel.
    let store = try PostgresSessionStore(url: cluster.freshStoreURL(), options: .init(lockTimeout: .zero))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let schema = store.schema
    // psql holds the row until the test cancels its sleep (which rolls its transaction back).
    let holder = Task {
      try? await cluster.psql(
        "BEGIN; SELECT 1 FROM session FOR UPDATE; SELECT pg_sleep(600); COMMIT;", schema: schema)
    }
    let sleeper = "FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()"
    #expect(
      try await eventually { try await cluster.psql("SELECT count(*) \(sleeper)") == "1\n" },
      "psql holds the row")
    let signingOut = Task { await model.logOut() }
    #expect(try await mainActorTurns() == 10)
    #expect(model.isSigningOut, "the sign-out waits for the row, off the main actor")
    #expect(model.isLoggedIn)
    _ = try await cluster.psql("SELECT pg_cancel_backend(pid) \(sleeper)")
    _ = await holder.value
    await signingOut.value
    #expect(!model.isSigningOut)
    #expect(model.writeError == nil)
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
  }

  /// Ten turns of 20 ms on the main actor (these tests run on it): each turn is the main
  /// actor running while a write waits elsewhere. Returns how many ran.
  func mainActorTurns() async throws -> Int {
    var turns = 0
    for _ in 0..<10 {
      try await Task.sleep(for: .milliseconds(20))
      turns += 1
    }
    return turns
  }

  @Test func aFailingLogOutIsShownNotThrown() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    try await SessionStore(path: path).logIn(as: "alice")
    let readOnly = try SessionStore(path: path, options: .init(readOnly: true))
    let model = ProfileViewModel(session: readOnly)
    await model.logOut()
    #expect(model.writeError?.contains("read-only") == true)
    #expect(model.isLoggedIn)
    #expect(model.readError == nil)
  }

  /// A repository whose file cannot be read.
  struct UnreadableSession: SessionRepository {
    struct Unreadable: Error, CustomStringConvertible {
      var description: String { "disk I/O error" }
    }
    var state: SessionState { get throws { throw Unreadable() } }
    func snapshot() throws -> SessionSnapshot { throw Unreadable() }
    func changes(from start: FeedStart) throws -> SessionSubscription { throw Unreadable() }
    func snapshotAndChanges() throws -> SessionSnapshotSubscription { throw Unreadable() }
    func values() -> SessionValues { InMemorySessionStore().values() }
    func history(from start: FeedStart, limit: Int) throws -> [SessionEntry] { throw Unreadable() }
    func bounds() throws -> FeedBounds { throw Unreadable() }
    func compact(keepingLast count: Int) throws -> CompactionResult { throw Unreadable() }
    func compact(before cursor: Cursor) throws -> CompactionResult { throw Unreadable() }
    func compact(olderThan age: Duration) throws -> CompactionResult { throw Unreadable() }
    func logIn(as username: String) async throws -> SessionEntry? { throw Unreadable() }
    func logOut() async throws -> SessionEntry? { throw Unreadable() }
    func rename(to username: String) async throws -> SessionEntry? { throw Unreadable() }
  }

  @Test func aSessionThatCannotBeReadIsShownAsUnavailableNotSignedOut() {
    let model = ProfileViewModel(session: UnreadableSession())
    #expect(model.greeting == Greeting.unavailable)
    #expect(model.readError == "The session cannot be read: disk I/O error")
    #expect(!model.isLoggedIn)
    #expect(model.username == nil)
  }

  /// Another process holds the write lock while the view model signs out: the main actor
  /// keeps running other work, and the sign-out completes once the lock is released.
  @Test func signingOutWhileAnotherProcessHoldsTheLockLeavesTheMainActorFree() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    // A busy timeout far beyond the test's own pace, even on a loaded machine.
    let store = try SessionStore(path: path, options: .init(busyTimeout: .seconds(50)))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let holder = try await LockHolder(path, scratch: dir.file("holder.err"))
    let signingOut = Task { await model.logOut() }
    #expect(try await mainActorTurns() == 10)
    #expect(model.isSigningOut, "the sign-out still waits for the lock, off the main actor")
    #expect(model.isLoggedIn)
    holder.release()
    await signingOut.value
    #expect(!model.isSigningOut)
    #expect(model.writeError == nil)
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
  }

  /// Another process alternates the session between (alice, signed in) and (bob, signed
  /// out) as fast as it can while thousands of view models are created: each starts with a
  /// committed pair (one read, a snapshot), and its greeting agrees with its fields.
  @Test func viewModelsCreatedDuringAlternatingCommitsStartFromACommittedState() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    let script = """
      import sqlite3, sys
      db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
      db.execute("PRAGMA synchronous = OFF")
      print("alternating", flush=True)
      while True:
          db.execute("UPDATE session SET username = 'bob', is_logged_in = 0")
          db.execute("UPDATE session SET username = 'alice', is_logged_in = 1")
      """
    let alternator = try await ChildProcess(
      "/usr/bin/python3", ["-c", script, path], environment: [:], stdout: .pipe,
      stderr: .file(dir.file("python.err")))
    defer {
      alternator.kill(SIGKILL)
      alternator.wait()
    }
    #expect(try await alternator.readLine() == "alternating")
    let headBefore = try store.snapshot().cursor
    var torn: [String] = []
    var created = 0
    let deadline = ContinuousClock.now + .seconds(5)
    // At least 3,000 view models, and until the other process committed 300 times (or 5 s
    // passed, on a loaded machine). Other tests run on the main actor too: yield to them.
    while try created < 3000
      || (store.snapshot().cursor.value - headBefore.value < 300 && ContinuousClock.now < deadline)
    {
      created += 1
      if created % 100 == 0 { await Task.yield() }
      let model = ProfileViewModel(session: store)
      let pair = "\(model.username ?? "nil")/\(model.isLoggedIn)"
      if pair != "alice/true" && pair != "bob/false" { torn.append(pair) }
      if model.greeting != Greeting.text(username: model.username, isLoggedIn: model.isLoggedIn) {
        torn.append("greeting \(model.greeting) for \(pair)")
      }
    }
    let commits = try store.snapshot().cursor.value - headBefore.value
    #expect(commits >= 50, "the other process committed \(commits) times while \(created) were created")
    #expect(torn.isEmpty, "states never committed: \(torn.prefix(10))")
  }
}
