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
    let store = InMemorySessionStore()
    try store.blocking.logIn(as: "ada")
    #expect(GreetingViewModel(session: store.state).greeting == "Hello, ada")
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

  /// Runs `body` while `model.follow()` runs in a task of its own, as SwiftUI's `.task` runs
  /// it; then cancels the task and waits for `follow()` to return.
  func whileFollowing(_ model: ProfileViewModel, _ body: () async throws -> Void) async throws {
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
    let store = try PostgresSessionStore(url: cluster.freshStoreURL(), options: .init(origin: "app"))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      #expect(GreetingViewModel(session: try store.state).greeting == "Hello, alice")

      _ = try await cluster.psql("UPDATE session SET username = 'dave'", schema: store.schema)
      try await model.waitUntil { $0.greeting == "Hello, dave" && $0.lastChange?.origin == "external" }
      #expect(GreetingViewModel(session: try store.state).greeting == "Hello, dave")

      await model.logOut()
      try await model.waitUntil { !$0.isLoggedIn && $0.greeting == "Signed out" }
    }
    let last = try #require(try store.history(from: .beginning, limit: 10).last)
    #expect(last.events == [.loggedOut(username: "dave")])
    #expect(try store.history(from: .beginning, limit: 10).map(\.origin) == ["app", "external", "app"])
  }

  // MARK: Lifecycle

  /// How many subscriptions (and iterators) a store's feed has registered for wake-ups.
  func subscribers(_ store: some _SessionBackedStore) -> Int? {
    (store._core.backend.feed.signal as? Beacon)?.listenerCount
  }

  /// The threads of this process named `name`.
  func threads(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.count(where: { task in
      (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(name) == true
    })
  }

  /// Counts the calls of an opener.
  final class Calls: Sendable {
    private let count = Atomic(0)
    var value: Int { count.load(ordering: .relaxed) }
    func add() { count.add(1, ordering: .relaxed) }
  }

  /// SwiftUI builds a view model on every re-render of the parent view and throws most of
  /// them away: building thousands opens no subscription, descriptor or thread.
  @Test func constructingThousandsOfViewModelsOpensNothing() throws {
    let dir = try TemporaryDirectory()
    let files = try (0..<16).map { try SessionStore(path: dir.file("session\($0).db")) }
    let memory = InMemorySessionStore()
    let opened = Calls()
    let opener = SessionOpener {
      opened.add()
      return memory
    }
    let descriptorsBefore = openFileDescriptors(for: dir.path)
    let watchersBefore = threads(named: "ChangeWatcher")
    let allDescriptorsBefore =
      (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    var models: [AnyObject] = []
    for index in 0..<3_200 {
      let profile = ProfileViewModel(session: files[index % files.count])
      #expect(profile.phase == .idle && profile.greeting == Greeting.loading)
      models.append(profile)
      models.append(ProfileViewModel(session: memory))
      models.append(ProfileViewModel(opener: opener))
      models.append(SignInViewModel(session: memory))
    }
    #expect(files.map { subscribers($0) ?? -1 } == Array(repeating: 0, count: files.count))
    #expect(subscribers(memory) == 0)
    #expect(opened.value == 0, "no view model called its opener")
    #expect(openFileDescriptors(for: dir.path) == descriptorsBefore, "no watcher on the stores' directory")
    // Other suites run in this process meanwhile: one watcher (and its inotify descriptor
    // and pipe) per file would add 16 threads and 48 descriptors; allow for a few of theirs.
    #expect(threads(named: "ChangeWatcher") - watchersBefore < 8)
    let allDescriptorsAfter =
      (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    #expect(allDescriptorsAfter - allDescriptorsBefore < 16)
    #expect(models.count == 12_800)
  }

  @Test func followEndsWithItsTaskAndReleasesWhatItOpened() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    try await store.logIn(as: "alice")
    let watching = { openFileDescriptors(for: dir.path).contains("anon_inode:inotify") }
    let model = ProfileViewModel(session: store)
    let following = Task { await model.follow() }
    try await model.waitUntil { $0.greeting == "Hello, alice" }
    #expect(subscribers(store) == 1)
    #expect(watching(), "the subscription started the store's watcher")
    following.cancel()
    await following.value  // follow() returns with its task
    #expect(subscribers(store) == 0)
    // The watcher thread closes its descriptor as it exits, a moment after it is told to.
    #expect(await eventually { !watching() }, "the store's watcher stopped")

    // A store the view model opened itself is released too: nothing of its file stays open.
    let openedDir = try TemporaryDirectory()
    let openedPath = openedDir.file("session.db")
    try await SessionStore(path: openedPath).logIn(as: "bob")
    #expect(await eventually { openFileDescriptors(for: openedDir.path).isEmpty })
    let opening = ProfileViewModel(opener: SessionOpener { try SessionStore(path: openedPath) })
    let followingOpened = Task { await opening.follow() }
    try await opening.waitUntil { $0.greeting == "Hello, bob" }
    #expect(!openFileDescriptors(for: openedDir.path).isEmpty)
    await opening.logOut()
    try await opening.waitUntil { $0.greeting == "Signed out" }
    followingOpened.cancel()
    await followingOpened.value
    #expect(
      await eventually { openFileDescriptors(for: openedDir.path).isEmpty }, "the opened store was closed")
    await opening.logOut()
    #expect(opening.writeError == "Could not sign out: the session is not open")
  }

  @Test func cancellingFollowEndsItsListenConnectionOnPostgres() async throws {
    let cluster = try await PostgresCluster.shared()
    let origin = "release-\(UInt32.random(in: 0...UInt32.max))"
    let store = try PostgresSessionStore(url: cluster.freshStoreURL(), options: .init(origin: origin))
    try await store.logIn(as: "alice")
    let listening = {
      try await cluster.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(origin)/listener'")
        == "1\n"
    }
    let model = ProfileViewModel(session: store)
    let following = Task { await model.follow() }
    try await model.waitUntil { $0.greeting == "Hello, alice" }
    #expect(try await eventually { try await listening() }, "the view model subscribed")
    following.cancel()
    await following.value
    #expect(
      try await eventually { try await !listening() },
      "its subscription ended and closed the LISTEN connection")
  }

  // MARK: No dead ends

  /// An opener for a read-only viewer of `path`, tried again every 20 ms.
  func readOnlyOpener(_ path: String, calls: Calls? = nil) -> SessionOpener {
    SessionOpener(retryInterval: .milliseconds(20)) {
      calls?.add()
      return try SessionStore(path: path, options: .init(readOnly: true))
    }
  }

  @Test func aReadOnlyViewerStartsBeforeTheFirstWrite() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let calls = Calls()
    let model = ProfileViewModel(opener: readOnlyOpener(path, calls: calls))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.phase == .noSessionYet }
      #expect(model.greeting == "No session yet")
      #expect(model.readError == nil)
      let writer = try SessionStore(path: path, options: .init(origin: "writer"))
      try await writer.logIn(as: "alice")
      try await model.waitUntil { $0.greeting == "Hello, alice" && $0.phase == .following }
      try await writer.rename(to: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" && $0.lastChange?.origin == "writer" }
    }
    #expect(calls.value >= 2, "the opener was tried again until the file existed")
  }

  /// Deletes the store's file with its `-wal` and `-shm`, as `rm session.db*` does.
  func delete(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
  }

  @Test func aFileDeletedAndRecreatedIsFollowedAgain() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    // Kept open to the end, as another process would keep it: its connections never touch
    // the new file (SQLite does not checkpoint into a file that was deleted).
    let first = try SessionStore(path: path, options: .init(origin: "first"))
    try await first.logIn(as: "alice")
    let model = ProfileViewModel(opener: readOnlyOpener(path))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      delete(path)
      let second = try SessionStore(path: path, options: .init(origin: "second"))
      try await second.logIn(as: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" && $0.phase == .following }
      try await second.rename(to: "carol")
      try await model.waitUntil { $0.greeting == "Hello, carol" && $0.lastChange?.origin == "second" }
    }
    withExtendedLifetime(first) {}
  }

  @Test func aStoreHandedInWhoseFileIsReplacedSaysToOpenItAgain() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let following = Task { await model.follow() }
    defer { following.cancel() }
    try await model.waitUntil { $0.greeting == "Hello, alice" }
    delete(path)
    try await SessionStore(path: path).logIn(as: "bob")
    try await model.waitUntil {
      if case .reopenRequired = $0.phase { true } else { false }
    }
    await following.value  // follow() returns by itself: nothing more can come from this store
    #expect(model.greeting == Greeting.unavailable)
    #expect(model.readError?.contains("open the store again") == true, "\(model.readError ?? "nil")")
  }

  @Test func aRestoreOfAnOlderBackupIsFollowedFromANewSnapshot() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    try await store.logIn(as: "alice")
    _ = try store.backup(to: dir.file("backup.db"))
    // No retry within the test: only following again at once from a new snapshot passes.
    let model = ProfileViewModel(session: store, retryInterval: .seconds(3_600))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      try await store.rename(to: "bob")
      try await store.rename(to: "carol")
      try await model.waitUntil { $0.greeting == "Hello, carol" }
      _ = try store.restore(from: dir.file("backup.db"))
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      #expect(model.phase == .following)
      #expect(model.lastChange?.cursor == Cursor(1))
      // The restored log hands out cursor 2 again, for another change: it is followed.
      try await store.rename(to: "dave")
      try await model.waitUntil { $0.greeting == "Hello, dave" && $0.lastChange?.cursor == Cursor(2) }
    }
  }

  /// A repository whose reads fail until the test repairs it.
  struct FlakySession: SessionRepository {
    struct Unreadable: Error, CustomStringConvertible {
      var description: String { "disk I/O error" }
    }
    final class Fault: Sendable {
      let broken = Atomic(true)
    }
    let store = InMemorySessionStore()
    let fault = Fault()

    func check() throws { if fault.broken.load(ordering: .relaxed) { throw Unreadable() } }
    var state: SessionState { get throws { try check(); return store.state } }
    func snapshot() throws -> SessionSnapshot { try check(); return try store.snapshot() }
    func changes(from start: FeedStart) throws -> SessionSubscription {
      try check(); return try store.changes(from: start)
    }
    func snapshotAndChanges() throws -> SessionSnapshotSubscription {
      try check(); return try store.snapshotAndChanges()
    }
    func values() -> SessionValues { store.values() }
    func history(from start: FeedStart, limit: Int) throws -> [SessionEntry] {
      try check()
      return try store.history(from: start, limit: limit)
    }
    func bounds() throws -> FeedBounds { try check(); return store.bounds() }
    func compact(keepingLast count: Int) throws -> CompactionResult { try store.compact(keepingLast: count) }
    func compact(before cursor: Cursor) throws -> CompactionResult { try store.compact(before: cursor) }
    func compact(olderThan age: Duration) throws -> CompactionResult { try store.compact(olderThan: age) }
    func logIn(as username: String) async throws -> SessionEntry? { try await store.logIn(as: username) }
    func logOut() async throws -> SessionEntry? { try await store.logOut() }
    func rename(to username: String) async throws -> SessionEntry? { try await store.rename(to: username) }
  }

  @Test func aSessionThatCannotBeReadIsShownAsUnavailableAndReadAgain() async throws {
    let session = FlakySession()
    _ = try await session.logIn(as: "alice")
    let model = ProfileViewModel(session: session, retryInterval: .milliseconds(20))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.phase != .idle }
      #expect(model.greeting == Greeting.unavailable)
      #expect(model.readError == "The session cannot be read: disk I/O error")
      #expect(!model.isLoggedIn, "never a guess")
      #expect(model.username == nil)
      session.fault.broken.store(false, ordering: .relaxed)
      try await model.waitUntil { $0.greeting == "Hello, alice" && $0.phase == .following }
      #expect(model.readError == nil)
    }
  }

  // MARK: What screens need

  @Test func signingInChecksTheUsernameByTheLibrarysRules() async throws {
    let store = InMemorySessionStore()
    let signIn = SignInViewModel(session: store)
    #expect(signIn.usernameProblem == nil, "an empty field is not an error yet")
    #expect(!signIn.canSignIn)
    signIn.username = "ali\u{200B}ce"
    let problem = try #require(signIn.usernameProblem)
    #expect(
      problem.hasPrefix("invalid username: ") && problem.contains("U+200B (ZERO WIDTH SPACE)"), "\(problem)")
    #expect(!signIn.canSignIn)
    #expect(await signIn.signIn() == false)
    #expect(signIn.signInError == problem)
    #expect(store.state.isLoggedIn == false, "nothing was written")

    let profile = ProfileViewModel(session: store)
    try await whileFollowing(profile) {
      try await profile.waitUntil { $0.greeting == "Signed out" }
      signIn.username = "alice"
      #expect(signIn.usernameProblem == nil)
      #expect(signIn.canSignIn)
      #expect(await signIn.signIn())
      #expect(signIn.signInError == nil)
      #expect(signIn.signedInAs == "alice")
      try await profile.waitUntil { $0.greeting == "Hello, alice" }

      // The same, through the store an opener opens for the sign-in.
      let opening = SignInViewModel(opener: SessionOpener { store })
      opening.username = "bob"
      #expect(await opening.signIn())
      try await profile.waitUntil { $0.greeting == "Hello, bob" }
    }
  }

  @Test func aSignInTheStoreRefusesIsShown() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    try await SessionStore(path: path).logOut()
    let signIn = SignInViewModel(session: try SessionStore(path: path, options: .init(readOnly: true)))
    signIn.username = "alice"
    #expect(await signIn.signIn() == false)
    #expect(signIn.signInError == "Could not sign in: the store was opened read-only")
    #expect(signIn.signedInAs == nil)
  }

  @Test func theLastChangeNamesItsOriginAndTime() async throws {
    let store = try InMemorySessionStore(origin: "tests")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.phase == .following }
      #expect(model.lastChange == nil, "the session never changed")
      try await store.logIn(as: "alice")
      let entry = try #require(try store.history(from: .beginning, limit: 10).last)
      try await model.waitUntil { $0.lastChange?.cursor == entry.cursor }
      #expect(model.lastChange?.origin == "tests")
      #expect(model.lastChange?.time == entry.time)
    }
    // Another view model starts from a snapshot, which says when but not who.
    let later = ProfileViewModel(session: store)
    try await whileFollowing(later) {
      try await later.waitUntil { $0.phase == .following }
      #expect(later.lastChange?.cursor == Cursor(1))
      #expect(later.lastChange?.time == store.state.updatedAt)
      #expect(later.lastChange?.origin == nil)
    }
  }

  // MARK: Writes never block the main actor

  /// A `psql` transaction holds the session row while the view model signs out on
  /// PostgreSQL: the main actor keeps running, and the sign-out completes after it.
  @Test func signingOutWhileAPsqlTransactionHoldsTheRowLeavesTheMainActorFree() async throws {
    let cluster = try await PostgresCluster.shared()
    // The sign-out waits for as long as psql holds the row, however long a loaded machine
    // takes to get to the cancel; the lock timeout only bounds a test that fails before it.
    let store = try PostgresSessionStore(
      url: cluster.freshStoreURL(), options: .init(lockTimeout: .seconds(120)))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let name = "holder_" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    let holding = "FROM pg_stat_activity WHERE application_name = '\(name)'"
    try await whileFollowing(model) {
      try await model.waitUntil { $0.isLoggedIn }
      // psql holds the row until the test cancels its sleep (which rolls its transaction back);
      // its backend ends with the test, whatever happens.
      let holder = Task { [schema = store.schema] in
        try? await cluster.psql(
          "SET application_name = '\(name)'; BEGIN; SELECT 1 FROM session FOR UPDATE; SELECT pg_sleep(600); COMMIT;",
          schema: schema)
      }
      try await withCleanup {
        try #require(
          await eventually {
            (try? await cluster.psql("SELECT count(*) \(holding) AND query LIKE '%pg_sleep%'")) == "1\n"
          }, "psql holds the row")
        let signingOut = Task { await model.logOut() }
        #expect(try await mainActorTurns() == 10)
        #expect(model.isSigningOut, "the sign-out waits for the row, off the main actor")
        #expect(model.isLoggedIn)
        // Cancelled again until psql's session is gone: psql ends once its sleep is cancelled.
        try #require(
          await eventually {
            _ = try? await cluster.psql("SELECT pg_cancel_backend(pid) \(holding)")
            return (try? await cluster.psql("SELECT count(*) \(holding)")) == "0\n"
          }, "psql's transaction ends")
        await signingOut.value
        #expect(!model.isSigningOut)
        #expect(model.writeError == nil)
        try await model.waitUntil { !$0.isLoggedIn && $0.greeting == "Signed out" }
      } cleanup: {
        _ = try? await cluster.psql("SELECT pg_terminate_backend(pid) \(holding)")
        _ = await holder.value
      }
    }
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
    try await whileFollowing(model) {
      try await model.waitUntil { $0.isLoggedIn }
      await model.logOut()
      #expect(model.writeError?.contains("read-only") == true)
      #expect(model.isLoggedIn)
      #expect(model.readError == nil)
    }
  }

  /// Another process holds the write lock while the view model signs out: the main actor
  /// keeps running other work, and the sign-out completes once the lock is released.
  @Test func signingOutWhileAnotherProcessHoldsTheLockLeavesTheMainActorFree() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    // The lock is held until the test releases it, and the sign-out must still be waiting
    // then: its busy timeout is the suite's hang guard, since the main actor this test
    // counts turns on is shared with every other view-model test of the process.
    let store = try SessionStore(path: path, options: .init(busyTimeout: .seconds(600)))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    try await whileFollowing(model) {
      try await model.waitUntil { $0.isLoggedIn }
      let holder = try await LockHolder(path, scratch: dir.file("holder.err"))
      let signingOut = Task { await model.logOut() }
      #expect(try await mainActorTurns() == 10)
      #expect(model.isSigningOut, "the sign-out still waits for the lock, off the main actor")
      #expect(model.isLoggedIn)
      holder.release()
      await signingOut.value
      #expect(!model.isSigningOut)
      #expect(model.writeError == nil)
      try await model.waitUntil { !$0.isLoggedIn && $0.greeting == "Signed out" }
    }
  }

  /// Another process alternates the session between (alice, signed in) and (bob, signed
  /// out) as fast as it can while view models start following: each starts with a committed
  /// pair (one read, a snapshot), and its greeting agrees with its fields.
  @Test func viewModelsStartedDuringAlternatingCommitsStartFromACommittedState() async throws {
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
    var started = 0
    let deadline = ContinuousClock.now + .seconds(5)
    // At least 1,000 view models, and until the other process committed 300 times (or 5 s
    // passed, on a loaded machine), started 50 at a time.
    while try started < 1_000
      || (store.snapshot().cursor.value - headBefore.value < 300 && ContinuousClock.now < deadline)
    {
      let batch = (0..<50).map { _ in ProfileViewModel(session: store) }
      let tasks = batch.map { model in Task { await model.follow() } }
      for model in batch {
        try await model.waitUntil { $0.phase != .idle }
        let pair = "\(model.username ?? "nil")/\(model.isLoggedIn)"
        if pair != "alice/true" && pair != "bob/false" { torn.append(pair) }
        if model.greeting != Greeting.text(username: model.username, isLoggedIn: model.isLoggedIn) {
          torn.append("greeting \(model.greeting) for \(pair)")
        }
      }
      for task in tasks { task.cancel() }
      for task in tasks { await task.value }
      started += batch.count
    }
    let commits = try store.snapshot().cursor.value - headBefore.value
    #expect(commits >= 50, "the other process committed \(commits) times while \(started) started")
    #expect(torn.isEmpty, "states never committed: \(torn.prefix(10))")
  }

  // MARK: Waiting for a state

  /// How many times a condition was checked.
  @MainActor final class Checks {
    var count = 0
  }

  @Test func waitingForAStateWakesOnEveryChangeAndTimesOut() async throws {
    let model = SignInViewModel(session: InMemorySessionStore())
    let checks = Checks()
    let waiting = Task {
      try await model.waitUntil {
        checks.count += 1
        return $0.username == "c"
      }
    }
    // Each change wakes the waiter once, and it checks again: the third change ends it.
    // Yielding lets the waiter run between the changes (a minute is a hang guard).
    let deadline = ContinuousClock.now + .seconds(60)
    for (checked, name) in [(0, "a"), (1, "b"), (2, "c")] {
      while checks.count == checked && ContinuousClock.now < deadline { await Task.yield() }
      #expect(checks.count == checked + 1, "the waiter checked again after the change before \(name)")
      model.username = name
    }
    try await waiting.value
    #expect(checks.count == 4)

    // A state that never comes: the hang guard ends the wait with an error.
    await #expect(throws: ViewModelWaitTimeout.self) {
      try await model.waitUntil(timeout: .milliseconds(50)) { $0.username == "never" }
    }
    // A state already there: no wait at all.
    try await model.waitUntil(timeout: .zero) { $0.username == "c" }
  }
}
