import Foundation
import Testing

/// A store switched to the rollback journal with the sqlite3 shell passes `check`, and so
/// every command reads it; a writing command switches it back to WAL.
@Suite(.timeLimit(.minutes(10))) struct JournalModeCommandTests {
  @Test func aStoreInDeleteModeIsReadAndAWriteTurnsItBackToWAL() async throws {
    let sandbox = try Sandbox()
    let database = sandbox.path("session.db")
    _ = try await sandbox.run(db: database, ["login", "alice"])
    #expect(try await sandbox.sqlite(database, "PRAGMA journal_mode = DELETE") == "delete")
    let check = try await sandbox.run(db: database, ["check"])
    #expect(check.status == 0, "\(check)")
    let status = try await sandbox.run(db: database, ["status"])
    #expect(status.status == 0, "\(status)")
    #expect(status.lines.contains("active     alice"), "\(status)")
    let watch = try await sandbox.run(db: database, ["watch", "--since", "0", "--limit", "1", "--json"])
    #expect(watch.status == 0, "\(watch)")
    #expect(watch.jsonLines.first?["cursor"] as? Int == 1, "\(watch)")
    #expect(try await sandbox.sqlite(database, "PRAGMA journal_mode") == "delete")

    let rename = try await sandbox.run(db: database, ["rename", "bob"])
    #expect(rename.status == 0, "\(rename)")
    #expect(try await sandbox.sqlite(database, "PRAGMA journal_mode") == "wal")
  }

  /// A store rebuilt from the sqlite3 shell's `.dump` is in DELETE mode and has
  /// `user_version` 0: `check` and every command say what happened and give the repair;
  /// repaired, it is read as it is, and a write turns it back to WAL.
  @Test func aStoreRebuiltFromADump() async throws {
    let sandbox = try Sandbox()
    let original = sandbox.path("original.db")
    let rebuilt = sandbox.path("rebuilt.db")
    _ = try await sandbox.run(db: original, ["login", "alice"])
    let dump = try await sandbox.runProgram(
      "/bin/sh", ["-c", "sqlite3 \"$1\" .dump | sqlite3 \"$2\"", "sh", original, rebuilt],
      environment: sandbox.environment)
    #expect(dump.status == 0, "\(dump)")
    for command in [["check"], ["status"]] {
      let refused = try await sandbox.run(db: rebuilt, command)
      #expect(refused.status == 1, "\(refused)")
      #expect(refused.stderr.contains("rebuilt from the sqlite3 shell's .dump"), "\(refused)")
      #expect(refused.stderr.contains("PRAGMA user_version = 4"), "\(refused)")
    }
    _ = try await sandbox.sqlite(rebuilt, "PRAGMA user_version = 4")
    #expect(try await sandbox.run(db: rebuilt, ["check"]).status == 0)
    let status = try await sandbox.run(db: rebuilt, ["status"])
    #expect(status.lines.contains("active     alice"), "\(status)")
    #expect(try await sandbox.run(db: rebuilt, ["login", "bob"]).status == 0)
    #expect(try await sandbox.sqlite(rebuilt, "PRAGMA journal_mode") == "wal")
  }
}
