import Foundation
import SessionStorage
import SessionViewModels
import TestSupport
import Testing

/// View models receive their session through the initializer and follow the feed.
@MainActor
@Suite(.timeLimit(.minutes(1))) struct ViewModelTests {
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
    try store.logIn(as: "ada")
    #expect(GreetingViewModel(session: store.state).greeting == "Hello, ada")
  }

  @Test func profileFollowsRenamesOnAnInMemoryStore() async throws {
    let store = InMemorySessionStore()
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")
    try await store.rename(to: "bob")
    #expect(await eventually { model.greeting == "Hello, bob" })
    await model.logOut()
    #expect(await eventually { model.greeting == "Signed out" && !model.isLoggedIn })
    #expect(store.state.isLoggedIn == false)
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

    try ProcessRunner.sqlite3(path, "UPDATE session SET username = 'dave'")
    #expect(await eventually { model.greeting == "Hello, dave" }, "an UPDATE made with the sqlite3 shell")

    await model.logOut()
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
    #expect(try store.history(from: .beginning, limit: 10).last?.events == [.loggedOut(username: "dave")])
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
    let holder = try LockHolder(path, scratch: dir.file("holder.err"))
    let signingOut = Task { await model.logOut() }
    var turns = 0
    for _ in 0..<10 {
      try await Task.sleep(for: .milliseconds(20))
      turns += 1  // this test runs on the main actor: each turn is the main actor running
    }
    #expect(turns == 10)
    #expect(model.isSigningOut, "the sign-out still waits for the lock, off the main actor")
    #expect(model.isLoggedIn)
    holder.release()
    await signingOut.value
    #expect(!model.isSigningOut)
    #expect(model.writeError == nil)
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
  }
}
