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
    #expect(status.lines.contains("username   alice"), "\(status)")
    let watch = try await sandbox.run(db: database, ["watch", "--since", "0", "--limit", "1", "--json"])
    #expect(watch.status == 0, "\(watch)")
    #expect(watch.jsonLines.first?["cursor"] as? Int == 1, "\(watch)")
    #expect(try await sandbox.sqlite(database, "PRAGMA journal_mode") == "delete")

    let rename = try await sandbox.run(db: database, ["rename", "bob"])
    #expect(rename.status == 0, "\(rename)")
    #expect(try await sandbox.sqlite(database, "PRAGMA journal_mode") == "wal")
  }
}
