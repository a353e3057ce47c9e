import Foundation
import Testing

/// A feed row inserted by hand with a cursor at the ends of Int64 never crashes a command:
/// every command exits with a documented status and says what is wrong.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CursorLimitCommandTests {
  /// The statuses the sessionctl manual (docs/sessionctl.md) documents.
  static let documented: Set<Int32> = [0, 1, 64, 65, 66, 67, 130, 143]

  /// A store with changes 1 and 2 (alice logs in, then out) and one row at `seq` inserted
  /// with the sqlite3 shell.
  func makeStore(_ sandbox: Sandbox, seq: Int64) async throws -> String {
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    _ = try await sandbox.run(db: db, ["logout"])
    try await sandbox.sqlite(db, Self.insert(seq))
    return db
  }

  static func insert(_ seq: Int64) -> String {
    "INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, "
      + "new_is_logged_in, old_updated_at) VALUES (\(seq), '2030-01-01T00:00:00.000Z', 'external', "
      + "'alice', 'mallory', 0, 0, '2030-01-01T00:00:00.000Z')"
  }

  static let commands: [[String]] = [
    ["status"], ["history"], ["history", "--since", "0"], ["history", "--limit", "1"],
    ["watch", "--limit", "0"], ["watch", "--since", "0", "--limit", "2"], ["check"], ["check", "--json"],
    ["compact", "--before", "2"], ["compact", "--keep", "1"], ["migrate"], ["login", "bob"], ["logout"],
  ]

  @Test(arguments: [Int64.max, Int64.max - 1, Int64.min])
  func noCommandTrapsOnAHandInsertedCursor(_ seq: Int64) async throws {
    let sandbox = try Sandbox()
    let original = try await makeStore(sandbox, seq: seq)  // closed: everything is in the main file
    for (index, command) in Self.commands.enumerated() {
      let db = sandbox.path("copy-\(index).db")
      try FileManager.default.copyItem(atPath: original, toPath: db)
      let outcome = try await sandbox.run(db: db, command)
      #expect(Self.documented.contains(outcome.status), "\(seq) \(command): \(outcome)")
      #expect(!outcome.stderr.contains("Fatal error"), "\(seq) \(command): \(outcome)")
      #expect(!outcome.stderr.contains("runtime failure"), "\(seq) \(command): \(outcome)")
    }
  }

  @Test func historyAndWatchRefuseTheGapBeforeTheLargestCursorAndServeWhatFollowsNoGap() async throws {
    let sandbox = try Sandbox()
    let db = try await makeStore(sandbox, seq: .max)
    let history = try await sandbox.run(db: db, ["history", "--json"])
    #expect(history.status == 67, "\(history)")
    #expect(history.stderr.contains("missing between 2 and \(Int64.max)"), "\(history)")
    let paged = try await sandbox.run(db: db, ["history", "--since", "\(Int64.max - 1)", "--json"])
    #expect(paged.jsonLines.compactMap { $0["cursor"] as? Int64 } == [.max])
    let after = try await sandbox.run(db: db, ["history", "--since", "\(Int64.max)"])
    #expect(after.status == 0, "\(after)")
    #expect(after.stdout == "")
    let watch = try await sandbox.run(db: db, ["watch", "--since", "1", "--limit", "2", "--json"])
    #expect(watch.status == 67, "\(watch)")
    // The page that holds the gap is refused whole.
    #expect(watch.jsonLines.compactMap { $0["cursor"] as? Int64 } == [], "\(watch)")
    let snapshot = try await sandbox.run(db: db, ["watch", "--limit", "0", "--json"])
    #expect(snapshot.jsonLines.first?["cursor"] as? Int64 == .max)
    let compact = try await sandbox.run(db: db, ["compact", "--keep", "1"])
    #expect(compact.status == 0, "\(compact)")
    #expect(compact.stdout == "removed 2 entries; kept \(Int64.max)…\(Int64.max)\n")
    let kept = try await sandbox.run(db: db, ["history", "--json"])
    #expect(kept.status == 0, "\(kept)")
    #expect(kept.jsonLines.compactMap { $0["cursor"] as? Int64 } == [.max])
  }

  @Test func aWriteAtTheLargestCursorSaysWhatIsWrongAndCheckToo() async throws {
    let sandbox = try Sandbox()
    let db = try await makeStore(sandbox, seq: .max)
    let login = try await sandbox.run(db: db, ["login", "bob"])
    #expect(login.status == 1, "\(login)")
    #expect(login.stdout == "")
    #expect(login.stderr.contains("reached the largest integer"), "\(login)")
    #expect(login.stderr.contains("inserted by hand"), "\(login)")
    #expect(!login.stderr.hasPrefix("sessionctl: error: \(db): database or disk is full"), "\(login)")
    #expect(try await sandbox.sqlite(db, "SELECT username, is_logged_in FROM session") == "alice|0")
    let check = try await sandbox.run(db: db, ["check"])
    #expect(check.status == 1, "\(check)")
    #expect(
      check.lines.contains { $0.hasPrefix("FAIL  cursors ") && $0.contains("largest integer") }, "\(check)")

    // The repair the message gives makes the file writable again.
    try await sandbox.sqlite(
      db,
      "DELETE FROM session_changes WHERE seq = \(Int64.max); "
        + "UPDATE sqlite_sequence SET seq = (SELECT max(seq) FROM session_changes) WHERE name = 'session_changes'"
    )
    let again = try await sandbox.run(db: db, ["login", "bob", "--json"])
    #expect(again.status == 0, "\(again)")
    #expect(again.jsonLines.first?["cursor"] as? Int == 3)
  }

  @Test func theLastCursorIsWrittenThenWritesStop() async throws {
    let sandbox = try Sandbox()
    let db = try await makeStore(sandbox, seq: .max - 1)
    let first = try await sandbox.run(db: db, ["login", "bob", "--json"])
    #expect(first.status == 0, "\(first)")
    #expect(first.jsonLines.first?["cursor"] as? Int64 == .max)
    let second = try await sandbox.run(db: db, ["logout"])
    #expect(second.status == 1, "\(second)")
    #expect(second.stderr.contains("reached the largest integer"), "\(second)")
  }

  @Test func theSmallestCursorIsNamedAndHistorySinceZeroStillWorks() async throws {
    let sandbox = try Sandbox()
    let db = try await makeStore(sandbox, seq: .min)
    let history = try await sandbox.run(db: db, ["history"])
    #expect(history.status == 1, "\(history)")
    #expect(history.stderr.contains("\(Int64.min)"), "\(history)")
    let since = try await sandbox.run(db: db, ["history", "--since", "0", "--json"])
    #expect(since.status == 0, "\(since)")
    #expect(since.jsonLines.compactMap { $0["cursor"] as? Int } == [1, 2])
    let check = try await sandbox.run(db: db, ["check"])
    #expect(check.status == 1)
    #expect(check.lines.contains { $0.hasPrefix("FAIL  cursors ") && $0.contains("below 1") }, "\(check)")
    let login = try await sandbox.run(db: db, ["login", "bob", "--json"])
    #expect(login.status == 0, "\(login)")
    #expect(login.jsonLines.first?["cursor"] as? Int == 3)
  }
}
