import Foundation
import Testing

/// sessionctl on a file whose migration records were edited by hand: every command refuses
/// it (exit 1), names what disagrees, and leaves it untouched.
@Suite(.serialized, .timeLimit(.minutes(10))) struct MigrationLedgerCommandTests {
  @Test(arguments: [
    ("DELETE FROM schema_migrations", "schema_migrations records 0 migrations"),
    ("PRAGMA user_version = 0", "PRAGMA user_version is 0"),
    ("PRAGMA user_version = -1", "PRAGMA user_version is -1"),
    ("UPDATE schema_migrations SET version = 0 WHERE version = 1", "schema_migrations lists migration 0"),
    (
      "UPDATE schema_migrations SET version = -9223372036854775808 WHERE version = 1",
      "schema_migrations lists migration -9223372036854775808"
    ),
  ])
  func aLedgerEditIsRefusedByEveryCommand(_ sql: String, _ reason: String) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, sql)
    let before = try #require(sandbox.contents(db))
    for command in [["migrate"], ["login", "bob"], ["status"], ["check"], ["history"]] {
      let outcome = try await sandbox.run(db: db, command)
      #expect(outcome.status == 1, "\(command): \(outcome)")
      #expect(outcome.stderr.hasPrefix("sessionctl: error: \(db): "), "\(command): \(outcome)")
      #expect(outcome.stderr.contains(reason), "\(command): \(outcome)")
      #expect(!outcome.stderr.contains("already exists"), "\(command): \(outcome)")
      #expect(sandbox.contents(db) == before, "\(command) changed the file")
    }
  }
}
