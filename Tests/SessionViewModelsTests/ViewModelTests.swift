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
    try store.login(username: "ada")
    #expect(GreetingViewModel(session: store).greeting == "Hello, ada")
  }

  @Test func profileFollowsRenamesOnAnInMemoryStore() async throws {
    let store = InMemorySessionStore()
    try store.login(username: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")
    try store.rename(to: "bob")
    #expect(await eventually { model.greeting == "Hello, bob" })
    model.logOut()
    #expect(await eventually { model.greeting == "Signed out" && !model.isLoggedIn })
    #expect(store.state.isLoggedIn == false)
    #expect(model.lastError == nil)
  }

  @Test func profileFollowsEveryKindOfWriterOnARealFile() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try store.login(username: "alice")
    let model = ProfileViewModel(session: store)
    #expect(model.greeting == "Hello, alice")

    try store.rename(to: "bob")
    #expect(await eventually { model.greeting == "Hello, bob" }, "a rename through the injected store")

    let other = try SessionStore(path: path, options: .init(origin: "other"))
    try other.rename(to: "carol")
    #expect(await eventually { model.greeting == "Hello, carol" }, "a write from another store on the file")

    try ProcessRunner.sqlite3(path, "UPDATE session SET username = 'dave'")
    #expect(await eventually { model.greeting == "Hello, dave" }, "an UPDATE made with the sqlite3 shell")

    model.logOut()
    #expect(await eventually { !model.isLoggedIn && model.greeting == "Signed out" })
    #expect(try store.history(from: .beginning, limit: 10).last?.events == [.loggedOut(username: "dave")])
  }

  @Test func releasingAProfileEndsItsSubscription() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    try store.login(username: "alice")
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
    try SessionStore(path: path).login(username: "alice")
    let readOnly = try SessionStore(path: path, options: .init(readOnly: true))
    let model = ProfileViewModel(session: readOnly)
    model.logOut()
    #expect(model.lastError?.contains("read-only") == true)
    #expect(model.isLoggedIn)
  }
}
