import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// `schema_migrations`, `PRAGMA user_version` and the tables present must tell one story.
/// When a hand edit makes them disagree, the file is refused untouched with a message that
/// names all three and the SQL that repairs it.
@Suite(.timeLimit(.minutes(10))) struct MigrationLedgerTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// A hand edit of the ledger and what the refusal must say.
  struct Edit: Sendable, CustomTestStringConvertible {
    let name: String
    let sql: String
    let says: [String]
    var testDescription: String { name }
  }

  static let edits: [Edit] = [
    Edit(
      name: "ledger row deleted", sql: "DELETE FROM schema_migrations",
      says: [
        "schema_migrations records 0 migrations", "PRAGMA user_version is 4",
        "those of 4 migrations (0001_session_and_feed, 0002_feed_tip, 0003_retention, 0004_accounts)",
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (1, '0001_session_and_feed', '",
      ]),
    Edit(
      name: "user_version 0", sql: "PRAGMA user_version = 0",
      says: ["schema_migrations records 4 migrations", "PRAGMA user_version is 0", "PRAGMA user_version = 4"]),
    Edit(
      name: "user_version -1", sql: "PRAGMA user_version = -1",
      says: ["PRAGMA user_version is -1", "PRAGMA user_version = 4"]),
    Edit(
      name: "row deleted and user_version 0", sql: "DELETE FROM schema_migrations; PRAGMA user_version = 0",
      says: [
        "schema_migrations records 0 migrations", "PRAGMA user_version is 0",
        "those of 4 migrations (0001_session_and_feed, 0002_feed_tip, 0003_retention, 0004_accounts)",
        "INSERT INTO schema_migrations",
        "PRAGMA user_version = 4",
      ]),
    Edit(
      name: "version 0 recorded", sql: "UPDATE schema_migrations SET version = 0 WHERE version = 1",
      says: ["schema_migrations lists migration 0 (0001_session_and_feed) where migration 1 belongs"]),
    Edit(
      name: "ledger table dropped", sql: "DROP TABLE schema_migrations",
      says: ["the schema_migrations table is missing", "CREATE TABLE schema_migrations"]),
  ]

  @Test(arguments: edits)
  func aLedgerEditIsRefusedUntouchedWithTheRepair(_ edit: Edit) async throws {
    try await SessionStore(path: path).logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, edit.sql)
    let before = try #require(fileBytes(path))
    for readOnly in [false, true] {
      let error = try #require(throws: SessionStorageError.self) {
        try SessionStore(path: path, options: .init(readOnly: readOnly))
      }
      #expect(error.code == .inconsistentMigrations, "\(error)")
      for phrase in edit.says { #expect(error.message.contains(phrase), "\(phrase) — \(error.message)") }
      #expect(!error.message.contains("already exists"))
      #expect(fileBytes(path) == before)
    }
  }

  @Test(arguments: [
    ("DELETE FROM schema_migrations; PRAGMA user_version = 0", "INSERT INTO schema_migrations"),
    ("DROP TABLE schema_migrations", "CREATE TABLE schema_migrations"),
    ("PRAGMA user_version = -1", "PRAGMA user_version = 4"),
  ])
  func theRepairInTheMessageMakesTheFileUsableAgain(_ edit: String, _ repairStart: String) async throws {
    try await SessionStore(path: path).logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, edit)
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: path) }
    let repair = try #require(error.message.range(of: repairStart))
    try await ProcessRunner.sqlite3(path, String(error.message[repair.lowerBound...]))
    let store = try SessionStore(path: path)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    #expect(try await store.rename(to: "bob")?.cursor == Cursor(2))
  }
}
