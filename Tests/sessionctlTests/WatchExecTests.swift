import Foundation
import TestSupport
import Testing

/// `watch --exec`: a command per change, in order, one at a time, with the change in its
/// environment and on its standard input, never in a shell string.
@Suite(.serialized, .timeLimit(.minutes(10))) struct WatchExecTests {
  /// A hook that appends what it received (its `SESSION_*` variables, its arguments and
  /// its standard input) as one JSON line to the file named by its first argument.
  static let recorder = """
    import json, os, sys
    record = {k: v for k, v in os.environ.items() if k.startswith("SESSION_")}
    record["argv"] = sys.argv[2:]
    record["stdin"] = sys.stdin.read()
    with open(sys.argv[1], "a") as f:
        f.write(json.dumps(record) + "\\n")
    print("recorded", record["SESSION_CURSOR"])
    """

  func json(_ line: String?) throws -> [String: Any] {
    let text = try #require(line)
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  /// The records of the hook, in order.
  func records(_ sandbox: Sandbox, _ file: String) throws -> [[String: Any]] {
    let text = String(decoding: sandbox.contents(file) ?? Data(), as: UTF8.self)
    return try text.split(separator: "\n").map { try json(String($0)) }
  }

  func recorderCommand(_ sandbox: Sandbox) throws -> [String] {
    let script = sandbox.path("recorder.py")
    try Self.recorder.write(toFile: script, atomically: true, encoding: .utf8)
    return ["python3", script, sandbox.path("records"), "$(touch injected)", "`touch injected`"]
  }

  @Test func everyChangeReachesTheCommandOnceInOrderAcrossARestart() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["migrate"])
    let hook = try recorderCommand(sandbox)
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--json", "--exec", "--"] + hook)
    #expect(try await json(watch.readLine())["type"] as? String == "snapshot")

    // Usernames only the sqlite3 shell can store: quotes, $(), backticks, a newline.
    let nasty = "a'b\"c $(touch injected) `touch injected` ${HOME}\nd; touch injected"
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(
      db,
      "UPDATE session SET username = 'a''b\"c $(touch injected) `touch injected` ${HOME}' || char(10) || 'd; touch injected'"
    )
    _ = try await sandbox.run(db: db, ["logout"])
    var printed: [[String: Any]] = []
    for _ in 1...3 { printed.append(try await json(watch.readLine())) }
    #expect(printed.map { $0["cursor"] as? Int } == [1, 2, 3])
    watch.kill(SIGTERM)
    #expect(try await watch.wait(timeout: .seconds(20)) == 143)
    let hookOutput = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(hookOutput == "recorded 1\nrecorded 2\nrecorded 3\n", "its output goes to stderr")

    // While nobody watches: two more changes; the restart resumes after the last line printed.
    _ = try await sandbox.run(db: db, ["rename", "bob"])
    _ = try await sandbox.run(db: db, ["login", "carol"])
    let last = try #require(printed.last)
    let token = "\(last["cursor"] as? Int ?? -1)@\(last["at"] as? String ?? "")"
    let (again, _) = try await sandbox.start(
      ["--db", db, "watch", "--json", "--since", token, "--limit", "3", "--exec", "--"] + hook)
    #expect(try await json(again.readLine())["cursor"] as? Int == 4)
    #expect(try await json(again.readLine())["cursor"] as? Int == 5)
    _ = try await sandbox.run(db: db, ["logout"])
    #expect(try await json(again.readLine())["cursor"] as? Int == 6)
    #expect(try await again.wait(timeout: .seconds(20)) == 0)

    let seen = try records(sandbox, sandbox.path("records"))
    #expect(
      seen.map { $0["SESSION_CURSOR"] as? String } == ["1", "2", "3", "4", "5", "6"], "once each, in order")
    #expect(seen[1]["SESSION_USERNAME"] as? String == nasty, "verbatim")
    #expect(seen[1]["SESSION_ORIGIN"] as? String == "external")
    #expect(seen[1]["SESSION_EVENTS"] as? String == "rename")
    #expect(seen[0]["SESSION_EVENTS"] as? String == "add,login,activate")
    #expect(seen[0]["SESSION_ACCOUNT"] as? String == "1")
    #expect(seen[0]["SESSION_ACTIVE"] as? String == "1")
    #expect(seen[0]["SESSION_LOGGED_IN"] as? String == "1")
    #expect(seen[2]["SESSION_LOGGED_IN"] as? String == "0")
    #expect(seen[2]["SESSION_EVENTS"] as? String == "logout")
    #expect(seen[0]["SESSION_TIME"] as? String == printed[0]["at"] as? String)
    for record in seen {
      #expect(record["argv"] as? [String] == ["$(touch injected)", "`touch injected`"])
    }
    // Standard input is the change's JSON line, the same one `watch --json` prints.
    let stdin = try json((seen[1]["stdin"] as? String)?.trimmingCharacters(in: .newlines))
    #expect(stdin["cursor"] as? Int == 2)
    #expect((stdin["after"] as? [String: Any])?["username"] as? String == nasty)
    #expect((seen[1]["stdin"] as? String)?.filter { $0 == "\n" }.count == 1, "one line")
    #expect(!sandbox.exists(sandbox.path("injected")) && !sandbox.exists(sandbox.home + "/injected"))
  }

  @Test func noUsernameLeavesTheVariableUnset() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    // A 1.x entry in which a shell user set only is_logged_in, with no username before or after.
    try await sandbox.sqlite(
      db,
      "INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, "
        + "new_is_logged_in, old_updated_at) VALUES (2, '2030-01-01T00:00:00.000Z', 'external', NULL, NULL, 0, 1, "
        + "'2030-01-01T00:00:00.000Z')")
    // An inherited SESSION_USERNAME is not passed on; other variables are.
    sandbox.environment["SESSION_USERNAME"] = "inherited"
    sandbox.environment["SESSION_MANAGER"] = "kept"
    let outcome = try await sandbox.run(
      db: db, ["watch", "--since", "1", "--limit", "1", "--exec", "--"] + (try recorderCommand(sandbox)))
    #expect(outcome.status == 0, "\(outcome)")
    let seen = try records(sandbox, sandbox.path("records"))
    #expect(seen.count == 1)
    #expect(seen.first?["SESSION_USERNAME"] == nil)
    #expect(seen.first?["SESSION_MANAGER"] as? String == "kept")
    #expect(seen.first?["SESSION_CURSOR"] as? String == "2")
  }

  /// The hook fails for the change that names the user "bad".
  static let failsForBad = [
    "/bin/sh", "-c", #"echo "ran $SESSION_CURSOR" >&2; test "$SESSION_USERNAME" != bad"#,
  ]

  @Test func aFailingCommandStopsWatchNamingTheCursor() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    for name in ["bad", "carol"] { _ = try await sandbox.run(db: db, ["rename", name]) }
    let outcome = try await sandbox.run(db: db, ["watch", "--since", "0", "--exec", "--"] + Self.failsForBad)
    #expect(outcome.status == 1, "\(outcome)")
    #expect(outcome.lines.count == 1)
    #expect(outcome.lines.first?.hasPrefix("1  ") == true, "only the change it succeeded on")
    #expect(outcome.stderr.contains("ran 2\nsessionctl: error: the command exited with 1 for cursor 2;"))
    #expect(!outcome.stderr.contains("ran 3"), "nothing after the failure")
  }

  @Test func keepGoingReportsAndContinues() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    for name in ["bad", "carol"] { _ = try await sandbox.run(db: db, ["rename", name]) }
    let outcome = try await sandbox.run(
      db: db, ["watch", "--since", "0", "--limit", "3", "--keep-going", "--exec", "--"] + Self.failsForBad)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.lines.map { $0.prefix(3) } == ["1  ", "3  "])
    #expect(
      outcome.stderr.contains("sessionctl: warning: the command exited with 1 for cursor 2; going on\nran 3"))
  }

  /// A command that hangs is its own business, but a signal to `watch` reaches it too.
  @Test(arguments: [(SIGTERM, Int32(143), "15"), (SIGINT, Int32(130), "2")])
  func signalsArePassedOnToARunningCommand(_ signal: Int32, _ status: Int32, _ number: String) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let received = sandbox.path("received")
    let script = """
      import signal, sys, time
      def stop(number, frame):
          open(sys.argv[1], "w").write(str(number))
          sys.exit(1)
      signal.signal(signal.SIGINT, stop)
      signal.signal(signal.SIGTERM, stop)
      print("waiting", flush=True)
      time.sleep(120)
      """
    let (watch, stderr) = try await sandbox.start(
      ["--db", db, "watch", "--since", "0", "--exec", "--", "python3", "-c", script, received])
    try #require(
      await eventually {
        String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self).contains("waiting")
      },
      "the command started")
    watch.kill(signal)
    #expect(try await watch.wait(timeout: .seconds(60)) == status)
    #expect(try await watch.readLine() == nil, "the change it was acting on is not printed")
    #expect(await eventually { sandbox.contents(received) != nil }, "the command received the signal")
    #expect(sandbox.contents(received).map { String(decoding: $0, as: UTF8.self) } == number)
    #expect(String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self) == "waiting\n")
  }

  @Test(arguments: [
    (["watch", "notify"], "'watch' runs a command only with '--exec': watch --exec -- notify ..."),
    (["watch", "--exec"], "'--exec' needs a command: watch --exec -- <command> [<argument> ...]"),
    (["watch", "--keep-going"], "'--keep-going' goes with '--exec'"),
  ])
  func usageMistakes(_ arguments: [String], _ message: String) async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(db: sandbox.path("s.db"), arguments)
    #expect(outcome.status == 64)
    #expect(outcome.stderr.hasPrefix("sessionctl: error: \(message)\n"), "\(outcome)")
  }

  @Test func aCommandThatCannotBeFoundIsRefusedBeforeAnythingIsPrinted() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let outcome = try await sandbox.run(db: db, ["watch", "--exec", "--", "no-such-hook"])
    #expect(outcome.status == 1)
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.stderr == "sessionctl: error: cannot run 'no-such-hook': not found in PATH\n")
  }
}
