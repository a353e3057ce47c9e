import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The change-feed of a real store: order, exactly-once, resuming, snapshots, other
/// writers, compaction and resources.
// Ten minutes, a hang guard: on a loaded machine these tests share two cores and the
// cooperative pool with every other suite's tests and child processes.
@Suite(.timeLimit(.minutes(10))) struct FeedTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  /// Alternates login and logout `count` times; returns the cursors acknowledged.
  @discardableResult
  func write(_ count: Int, on store: SessionStore? = nil) throws -> [Cursor] {
    let store = store ?? self.store
    return try (0..<count).map { index in
      let entry =
        index.isMultiple(of: 2) ? try store.blocking.logIn(as: "user\(index)") : try store.blocking.logOut()
      return try #require(entry).cursor
    }
  }

  @Test func everyWriteAppearsOnceInOrderForEveryStart() async throws {
    let early = try write(4)
    let fromNow = try store.changes(from: .now)
    let fromBeginning = try store.changes(from: .beginning)
    let fromCursor = try store.changes(from: .after(early[1]))
    let late = try await onThreadOfItsOwn { [self] in try write(20) }
    #expect(try await first(20, of: fromNow).map(\.cursor) == late)
    #expect(try await first(24, of: fromBeginning).map(\.cursor) == early + late)
    #expect(try await first(22, of: fromCursor).map(\.cursor) == Array(early.dropFirst(2)) + late)
    #expect((early + late).map(\.value) == Array(1...24))
  }

  @Test func manySubscribersEachReceiveEveryEntry() async throws {
    let subscriptions = try (0..<8).map { _ in try store.changes(from: .now) }
    let cursors = try write(50)
    for subscription in subscriptions {
      #expect(try await first(50, of: subscription).map(\.cursor) == cursors)
    }
  }

  @Test func aSnapshotHasNoGapAndNoDuplicateWhileWritersRace() async throws {
    try write(10)
    // The writes block their thread: one of their own, not one of the cooperative pool's.
    async let writer = onThreadOfItsOwn { [self] in try write(1000) }
    // Take the snapshot while the writer is busy.
    #expect(await eventually { (try? store.bounds().head.value) ?? 0 >= 30 })
    let start = try store.snapshotAndChanges()
    let final = try await writer.last ?? .zero
    let changes = try await first(Int(final.value - start.cursor.value), of: start.changes)
    #expect(
      changes.map(\.cursor.value)
        == Array(stride(from: start.cursor.value + 1, through: final.value, by: 1)))
    // A change of the active account starts from the snapshot's state (a login of a new
    // account starts from none).
    if let firstChange = changes.first, firstChange.change.wasActive {
      #expect(firstChange.before.username == start.state.username)
      #expect(firstChange.before.isLoggedIn == start.state.isLoggedIn)
    }
  }

  @Test func aSqlite3ShellBurstReachesASubscriberWithoutAnotherWrite() async throws {
    // No safety poll to help: only file events and their re-checks can deliver.
    let store = try SessionStore(
      path: dir.file("no-poll.db"), options: .init(origin: "test", safetyPollInterval: .seconds(600)))
    let changes = try store.changes(from: .now)
    let collector = Task { try await first(3, of: changes, within: .seconds(60)) }
    try await Task.sleep(for: .milliseconds(50))  // the collector is now waiting on the signal
    // The shell commits and exits; the last commit of the burst is seen too, with no
    // further write to help.
    try await ProcessRunner.sqlite3(
      store.requireFile().path,
      "UPDATE session SET username = 'shell1'; UPDATE session SET is_logged_in = 1; "
        + "UPDATE session SET username = 'shell2', is_logged_in = 0;")
    let received = try await collector.value
    #expect(received.map(\.origin) == ["external", "external", "external"])
    #expect(
      received.map(\.events) == [
        [.added(username: "shell1"), .activated(username: "shell1")], [.loggedIn(username: "shell1")],
        [.loggedOut(username: "shell1"), .usernameChanged(from: "shell1", to: "shell2")],
      ])
  }

  @Test func anotherStoreOnTheSameFileWakesSubscribers() async throws {
    let other = try SessionStore(path: path, options: .init(origin: "other"))
    let changes = try store.changes(from: .now)
    let cursors = try write(5, on: other)
    let received = try await first(5, of: changes)
    #expect(received.map(\.cursor) == cursors)
    #expect(Set(received.map(\.origin)) == ["other"])
  }

  @Test func aCompactedCursorFailsWithATypedError() async throws {
    let cursors = try write(10)
    let compaction = try store.compact(keepingLast: 3)
    #expect(compaction.removed == 7)
    #expect(compaction.bounds == FeedBounds(oldest: cursors[7], head: cursors[9]))
    let expected = FeedError.cursorCompacted(requested: cursors[2], oldestAvailable: cursors[7])
    #expect(throws: expected) { try store.changes(from: .after(cursors[2])) }
    #expect(throws: expected) { try store.history(from: .after(cursors[2])) }
    #expect(try store.history(from: .after(cursors[6])).map(\.cursor) == Array(cursors[7...]))
    #expect(try store.history(from: .beginning).map(\.cursor) == Array(cursors[7...]))
    #expect(throws: FeedError.cursorAhead(requested: Cursor(99), head: cursors[9])) {
      try store.changes(from: .after(Cursor(99)))
    }
  }

  @Test func aSubscriberThatFallsBehindACompactionIsToldSo() async throws {
    let cursors = try write(4)
    let subscription = try store.changes(from: .after(cursors[0]))
    try write(4)
    _ = try store.compact(before: cursors[3])
    await #expect(throws: FeedError.cursorCompacted(requested: cursors[0], oldestAvailable: cursors[3])) {
      _ = try await first(1, of: subscription)
    }
  }

  @Test func compactionByCursorKeepsTheEntryAtTheCursor() throws {
    let cursors = try write(6)
    let result = try store.compact(before: cursors[4])
    #expect(result.removed == 4)
    #expect(try store.history().map(\.cursor) == Array(cursors[4...]))
    #expect(throws: FeedError.self) { try store.compact(before: Cursor(100)) }
  }

  @Test func cancellingASubscriptionReleasesItsFileDescriptors() async throws {
    try write(1)
    let fds = { openFileDescriptors(for: dir.path) }
    func subscribeAndCancel() async throws {
      let task = Task { for try await _ in try store.changes(from: .beginning) {} }
      #expect(await eventually { fds().contains("anon_inode:inotify") }, "the watcher started")
      task.cancel()
      _ = try? await task.value
      #expect(await eventually { !fds().contains("anon_inode:inotify") }, "the watcher stopped")
    }
    // SQLite parks a closed connection's descriptor while other connections of this process
    // hold locks on the same file, and reuses it on the next open: measure after one round.
    try await subscribeAndCancel()
    let baseline = fds()
    for _ in 0..<3 { try await subscribeAndCancel() }
    #expect(await eventually { fds() == baseline })
  }

  @Test func valuesStartWithTheStateAndDropNothingButRepeats() async throws {
    try await store.logIn(as: "alice")
    var values = store.values().makeAsyncIterator()
    var states = [try await values.next()]
    try await store.rename(to: "bob")
    try await store.logOut()
    states += [try await values.next(), try await values.next()]
    #expect(states.map { $0?.username } == ["alice", "bob", "bob"])
    #expect(states.map { $0?.isLoggedIn } == [true, true, false])
  }

  @Test(arguments: [
    ("", "empty"), ("   ", "only whitespace"), (" alice", "leading or trailing"),
    ("alice\n", "control character U+000A"),
    ("al\u{0}ice", "U+0000"), ("\u{1B}[31mred", "U+001B"), ("line\u{2028}sep", "U+2028"),
    (String(repeating: "x", count: 257), "longer than 256"),
    (String(repeating: "y", count: 1_000_000), "longer than 256"),
  ])
  func invalidUsernamesAreRefusedAndChangeNothing(_ name: String, _ rule: String) throws {
    try store.blocking.logIn(as: "alice")
    let before = try store.state
    let head = try store.bounds().head
    for attempt in [{ try store.blocking.logIn(as: name) }, { try store.blocking.rename(to: name) }] {
      let error = try #require(throws: SessionStorageError.self) { try attempt() }
      #expect(error.code == .invalidUsername)
      #expect(error.message.contains(rule), "\(error.message)")
    }
    #expect(try store.state == before)
    #expect(try store.bounds().head == head)
  }

  @Test(arguments: [
    "Robert'); DROP TABLE session;--", "مرحبا", "שלום", "🧑‍💻 dev", String(repeating: "z", count: 256),
  ])
  func unusualButValidUsernamesAreStoredLiterally(_ name: String) async throws {
    try await store.logIn(as: name)
    #expect(try store.state.username == name)
    #expect(try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM session") == "1\n")
  }

  @Test func composedAndDecomposedSpellingsNameTheSameUser() async throws {
    let composed = "Jos\u{E9}"
    let decomposed = "Jose\u{301}"
    #expect(composed.unicodeScalars.count != decomposed.unicodeScalars.count)
    try await store.logIn(as: decomposed)
    #expect(try store.state.username?.unicodeScalars.elementsEqual(composed.unicodeScalars) == true)
    #expect(try await store.logIn(as: composed) == nil, "same user: a no-op")
    #expect(try await ProcessRunner.sqlite3(path, "SELECT hex(username) FROM session") == "4A6F73C3A9\n")
  }

  @Test func invalidTextWrittenByTheShellIsReadWithoutACrashAndReported() async throws {
    try await ProcessRunner.sqlite3(
      path, "UPDATE session SET username = CAST(X'61FF0A62' AS TEXT), is_logged_in = 1")
    #expect(try store.state.username == "a\u{FFFD}\nb")
    let username = try #require(try store.check().first { $0.check == .username })
    #expect(username.verdict == .failed)
  }
}
