import Foundation
import TestSupport
import Testing

/// `watch` as a long-running process: lines read one at a time while other processes write.
@Suite(.serialized, .timeLimit(.minutes(10))) struct WatchTests {
  func json(_ line: String?) throws -> [String: Any] {
    let text = try #require(line)
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  @Test func seesOtherProcessesAndTheSqliteShellThenStopsAtTheLimit() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["migrate"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--json", "--limit", "3"])

    // The snapshot is read before any write starts.
    let snapshot = try await json(watch.readLine())
    #expect(Set(snapshot.keys) == ["type", "cursor", "state"])
    #expect(snapshot["type"] as? String == "snapshot")
    #expect(snapshot["cursor"] as? Int == 0)
    let state = try #require(snapshot["state"] as? [String: Any])
    #expect(Set(state.keys) == ["username", "isLoggedIn", "updatedAt"])
    #expect(state["username"] is NSNull)
    #expect(state["isLoggedIn"] as? Bool == false)

    // 1: a second sessionctl process.
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    let login = try await json(watch.readLine())
    #expect(login["type"] as? String == "change")
    #expect(login["cursor"] as? Int == 1)
    #expect(login["origin"] as? String == "sessionctl")
    let loginEvents = try #require(login["events"] as? [[String: Any]])
    #expect(loginEvents.map { $0["type"] as? String } == ["added", "loggedIn", "activated"])
    #expect(loginEvents[1]["username"] as? String == "alice")
    #expect((login["after"] as? [String: Any])?["username"] as? String == "alice")

    // 2: the sqlite3 shell.
    try await sandbox.sqlite(db, "UPDATE session SET username = 'x'")
    let update = try await json(watch.readLine())
    #expect(update["cursor"] as? Int == 2)
    #expect(update["origin"] as? String == "external")
    let updateEvents = try #require(update["events"] as? [[String: Any]])
    #expect(updateEvents.count == 1)
    #expect(updateEvents[0]["type"] as? String == "usernameChanged")
    #expect(updateEvents[0]["from"] as? String == "alice")
    #expect(updateEvents[0]["to"] as? String == "x")
    #expect((update["before"] as? [String: Any])?["username"] as? String == "alice")
    #expect((update["after"] as? [String: Any])?["isLoggedIn"] as? Bool == true)
    #expect(
      update["at"] as? String
        == (try await sandbox.sqlite(db, "SELECT at FROM session_changes WHERE seq = 2")))

    // 3: sessionctl again; the limit is reached and the process ends by itself.
    #expect(try await sandbox.run(db: db, ["logout"]).status == 0)
    let logout = try await json(watch.readLine())
    #expect(logout["cursor"] as? Int == 3)
    #expect((logout["events"] as? [[String: Any]])?.first?["type"] as? String == "loggedOut")
    #expect(try await watch.readLine() == nil)
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
    #expect(sandbox.contents(stderr) == Data())
  }

  @Test func humanOutput() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "-n", "1"])
    let snapshot = try #require(try await watch.readLine())
    #expect(
      snapshot.range(
        of: #"^snapshot at 1: alice, logged in, updated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#,
        options: .regularExpression) != nil, "\(snapshot)")
    _ = try await sandbox.run(db: db, ["rename", "bob"])
    let change = try #require(try await watch.readLine())
    #expect(change.hasPrefix("2  2"))
    #expect(change.hasSuffix("  sessionctl  rename alice → bob"))
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
  }

  @Test func sinceResumesWithoutASnapshot() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "a"], ["logout"], ["login", "b"]] { _ = try await sandbox.run(db: db, command) }
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "--json", "--since", "1", "--limit", "3"])
    #expect(try await json(watch.readLine())["cursor"] as? Int == 2)
    #expect(try await json(watch.readLine())["cursor"] as? Int == 3)
    _ = try await sandbox.run(db: db, ["logout"])
    let live = try await json(watch.readLine())
    #expect(live["type"] as? String == "change")
    #expect(live["cursor"] as? Int == 4)
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
  }

  @Test func limitZeroPrintsOnlyTheSnapshot() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["migrate"])
    let outcome = try await sandbox.run(db: db, ["watch", "--json", "--limit", "0"])
    #expect(outcome.status == 0)
    #expect(outcome.jsonLines.count == 1)
    #expect(outcome.jsonLines.first?["type"] as? String == "snapshot")
  }

  @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
  func signalsStopItCleanly(_ signal: Int32, _ status: Int32) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--json"])
    _ = try await json(watch.readLine())
    _ = try await sandbox.run(db: db, ["logout"])
    #expect(try await json(watch.readLine())["cursor"] as? Int == 2)
    watch.kill(signal)
    #expect(try await watch.wait(timeout: .seconds(20)) == status)
    #expect(try await watch.readLine() == nil, "nothing after the last whole line")
    #expect(sandbox.contents(stderr) == Data())
  }

  /// Whether a thread of `pid` sleeps in `write(2)` to a full pipe (its `wchan`).
  static func blockedWritingAPipe(_ pid: pid_t) -> Bool {
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return threads.contains { thread in
      let wchan = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/wchan", encoding: .utf8)
      return wchan?.contains("pipe_write") == true
    }
  }

  /// A reader that stalls (a paused pager) fills the pipe and blocks `watch` in
  /// `write(2)`; a service manager's SIGTERM or a SIGINT still ends it within about a
  /// second, with its status, and the output ends on a whole line.
  @Test(arguments: [(SIGTERM, Int32(143)), (SIGINT, Int32(130))])
  func aStalledReaderCannotKeepSignalsFromStoppingIt(_ signal: Int32, _ status: Int32) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "--json"])
    _ = try await json(watch.readLine())
    // About 1,000 changes of some 400 bytes: far more than a pipe holds.
    let updates = (0..<1000).map { "UPDATE session SET username = 'user-\($0)';" }.joined()
    try await sandbox.sqlite(db, updates)
    try #require(await eventually { Self.blockedWritingAPipe(watch.pid) }, "watch fills the pipe and blocks")
    let sent = ContinuousClock.now
    watch.kill(signal)
    // Nothing is read until it has exited: the reader stays stalled. Blocked for good, it
    // would never exit; the bound is loose for a loaded machine.
    #expect(try await watch.wait(timeout: .seconds(60)) == status)
    #expect(ContinuousClock.now - sent < .seconds(20))
    var lines: [String] = []
    while let line = try await watch.readLine() { lines.append(line) }
    #expect(lines.count > 10 && lines.count < 1000, "it was blocked, not done: \(lines.count) lines")
    for line in lines {
      #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "a cut line: \(line)")
    }
  }

  /// A restore of an older backup under a running `watch`: it stops with exit 67 and says
  /// to take a new snapshot, instead of printing cursors handed out a second time.
  @Test func aRestoreUnderARunningWatchEndsItWithItsOwnStatus() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, ".backup '\(sandbox.path("backup.db"))'")
    _ = try await sandbox.run(db: db, ["rename", "bob"])
    _ = try await sandbox.run(db: db, ["rename", "carol"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--since", "1"])
    #expect(try await watch.readLine()?.hasSuffix("rename alice → bob") == true)
    #expect(try await watch.readLine()?.hasSuffix("rename bob → carol") == true)
    try await sandbox.sqlite(db, ".restore '\(sandbox.path("backup.db"))'")
    _ = try await sandbox.run(db: db, ["rename", "dave"])  // cursor 2 again, another change
    #expect(try await watch.readLine() == nil, "no cursor of the rewritten history is printed")
    #expect(try await watch.wait(timeout: .seconds(20)) == 67)
    let message = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(message.contains("sessionctl: error: the history changed under cursor 3"), "\(message)")
    #expect(message.contains("start again from a snapshot"))
  }

  /// `--since CURSOR@TIME` (the time printed for that change) is checked: after a restore
  /// that grew past the cursor again, `watch` and `history` refuse with 67 instead of
  /// resuming with other changes; a malformed time is invalid input.
  @Test func resumingWithTheTimeOfTheLastChangeSeenNoticesARestore() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, ".backup '\(sandbox.path("backup.db"))'")
    let seen = try json(try await sandbox.run(db: db, ["rename", "bob", "--json"]).lines.last)
    let token = "\(seen["cursor"] as? Int ?? -1)@\(seen["at"] as? String ?? "")"
    #expect(try await sandbox.run(db: db, ["history", "--since", token]).status == 0)
    try await sandbox.sqlite(db, ".restore '\(sandbox.path("backup.db"))'")
    _ = try await sandbox.run(db: db, ["rename", "mallory"])  // cursor 2 again, another change
    for command in [["history", "--since", token], ["watch", "--since", token, "--limit", "1"]] {
      let outcome = try await sandbox.run(db: db, command)
      #expect(outcome.status == 67, "\(command): \(outcome)")
      #expect(outcome.stdout.isEmpty)
      #expect(outcome.stderr.contains("the history changed under cursor 2"), "\(outcome.stderr)")
    }
    let bad = try await sandbox.run(db: db, ["history", "--since", "2@yesterday"])
    #expect(bad.status == 65)
    #expect(bad.stderr.contains("expected the time printed for change 2 after the '@'"), "\(bad)")
  }

  @Test func aClosedPipeEndsItQuietlyEvenWhenIdle() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch"])
    _ = try await watch.readLine()
    watch.closeOutput()
    // No write is needed to notice: the reader going away wakes the watcher.
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
    #expect(sandbox.contents(stderr) == Data())
  }

  @Test func aClosedPipeEndsItQuietlyOnTheNextLine() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--json"])
    _ = try await watch.readLine()
    watch.closeOutput()
    _ = try await sandbox.run(db: db, ["logout"])
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
    #expect(sandbox.contents(stderr) == Data())
  }

  @Test func aWatchDoesNotBlockWriters() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["migrate"])
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "--json", "--limit", "20"])
    _ = try await watch.readLine()
    for index in 1...10 {
      #expect(try await sandbox.run(db: db, ["login", "user\(index)"]).status == 0)
      #expect(try await sandbox.run(db: db, ["logout"]).status == 0)
    }
    var cursors: [Int] = []
    while let line = try await watch.readLine() { cursors.append(try json(line)["cursor"] as? Int ?? -1) }
    #expect(cursors == Array(1...20), "every change once, in order")
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
  }
}
