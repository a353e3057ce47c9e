import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The cross-process watcher sees commits through the `-wal` file: another process that
/// keeps its connection open writes nothing else (it never closes, so it never checkpoints
/// into the database file), and its commits still wake subscribers here at once, with no
/// safety poll to help.
@Suite(.timeLimit(.minutes(10))) struct WALWatchTests {
  @Test func commitsOfAProcessThatKeepsItsConnectionOpenWakeSubscribersWithoutThePoll() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    // A poll far beyond the hang guards below: only file events can wake anyone.
    let store = try SessionStore(
      path: path, options: .init(origin: "test", safetyPollInterval: .seconds(3_600)))
    try await store.logIn(as: "alice")
    let client = try await PythonConnection.open(path, scratch: dir.file("python.err"))
    let changes = try store.changes(from: .now)
    #expect(changes.wakeMode == .notifications(pollInterval: .seconds(3_600)))
    var iterator = changes.makeAsyncIterator()
    let beacon = try store.requireFile().backend.beacon
    for name in ["bob", "carol", "dave"] {
      let generation = beacon.generation
      try await client.execute("UPDATE session SET username = '\(name)'")
      // The watcher wakes subscribers for it: nothing else can move the generation here.
      let woken = await eventually(timeout: .seconds(90)) {
        beacon.generation > generation
      }
      try #require(woken, "\(name)'s commit woke nobody (the -wal is not watched?)")
      let entry = try #require(try await iterator.next())
      #expect(entry.after.username == name)
      #expect(entry.origin == "external")
    }
  }
}
