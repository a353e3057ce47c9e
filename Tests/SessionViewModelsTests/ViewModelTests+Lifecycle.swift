import Foundation
import SessionStorage
import SessionStoragePostgres
import SessionViewModels
import Synchronization
import SystemKit
import TestSupport
import Testing

/// What following opens, and that it all ends with the task: subscriptions, threads, connections.
extension ViewModelTests {
  /// How many subscriptions (and iterators) a store's feed has registered for wake-ups.
  func subscribers(_ store: SessionStore) -> Int? {
    (store.backend.feed.signal as? Beacon)?.listenerCount
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
    let memory = SessionStore.inMemory()
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
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: origin))
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
}
