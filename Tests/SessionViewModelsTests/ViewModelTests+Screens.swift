import Foundation
import SessionStorage
import SessionStoragePostgres
import SessionViewModels
import Synchronization
import SystemKit
import TestSupport
import Testing

/// What screens need: sign-in checks, refusals, the last change, sign-out that leaves the main actor free, waiting for a state.
extension ViewModelTests {
  @Test func signingInChecksTheUsernameByTheLibrarysRules() async throws {
    let store = SessionStore.inMemory()
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
    #expect(try store.state.isLoggedIn == false, "nothing was written")

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
    let store = try SessionStore.inMemory(origin: "tests")
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
      #expect(try later.lastChange?.time == store.state.updatedAt)
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
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(), options: .init(lockTimeout: .seconds(120)))
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let name = "holder_" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    let holding = "FROM pg_stat_activity WHERE application_name = '\(name)'"
    try await whileFollowing(model) {
      try await model.waitUntil { $0.isLoggedIn }
      // psql holds the row until the test cancels its sleep (which rolls its transaction back);
      // its backend ends with the test, whatever happens.
      let holder = Task { [schema = try store.requirePostgres().schema] in
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
    let model = SignInViewModel(session: SessionStore.inMemory())
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
