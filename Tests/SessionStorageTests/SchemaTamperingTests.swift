import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A schema changed by hand (a trigger dropped, added or altered, a table or index dropped,
/// added or altered) is refused before a byte is written, with the object named and the
/// repair; `check` reports it; a write never returns an entry it did not create.
@Suite(.timeLimit(.minutes(10))) struct SchemaTamperingTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// A closed store where alice logged in (change 1).
  func makeClosedStore() throws {
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
  }

  /// The SQL of migration 0004, as a user would copy it from the repository.
  static let migrationSQL: String = {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("migrations/0004_accounts.sql")
    return (try? String(contentsOf: source, encoding: .utf8)) ?? ""
  }()

  /// The `CREATE TRIGGER accounts_external_update … END;` statement of the migration.
  static var feedTriggerSQL: String { triggerSQL("accounts_external_update") }

  /// The `CREATE TRIGGER name … END;` statement of migration 0004.
  static func triggerSQL(_ name: String) -> String {
    guard let start = migrationSQL.range(of: "CREATE TRIGGER \(name) "),
      let end = migrationSQL.range(of: "\nEND;", range: start.upperBound..<migrationSQL.endIndex)
    else { return "" }
    return String(migrationSQL[start.lowerBound..<end.upperBound])
  }

  /// A hand edit and the object the refusal must name.
  struct Tampering: Sendable, CustomTestStringConvertible {
    let name: String
    let sql: String
    let object: String
    var testDescription: String { name }
  }

  static let tamperings: [Tampering] = [
    Tampering(
      name: "trigger dropped", sql: "DROP TRIGGER accounts_external_update",
      object: "trigger accounts_external_update is missing"),
    Tampering(
      name: "trigger added",
      sql: "CREATE TRIGGER sneaky AFTER UPDATE ON accounts BEGIN SELECT 1; END",
      object: "trigger sneaky is not part of the schema"),
    Tampering(
      name: "trigger altered",
      sql:
        "DROP TRIGGER accounts_external_update; CREATE TRIGGER accounts_external_update AFTER UPDATE ON accounts BEGIN "
        + "INSERT INTO session_changes (at, origin, old_is_logged_in, new_is_logged_in, old_updated_at) "
        + "VALUES ('x', 'forged', 0, 0, 'x'); END",
      object: "trigger accounts_external_update differs"),
    Tampering(
      name: "guard trigger dropped", sql: "DROP TRIGGER session_refuse_delete",
      object: "trigger session_refuse_delete is missing"),
    Tampering(
      name: "index added", sql: "CREATE INDEX session_changes_at ON session_changes (at)",
      object: "index session_changes_at is not part of the schema"),
    Tampering(
      name: "column added", sql: "ALTER TABLE accounts ADD COLUMN note TEXT", object: "table accounts differs"
    ),
    Tampering(
      name: "table dropped", sql: "DROP TABLE session_changes", object: "table session_changes is missing"),
    Tampering(
      name: "table added", sql: "CREATE TABLE notes (x)", object: "table notes is not part of the schema"),
    Tampering(
      name: "view added", sql: "CREATE VIEW v AS SELECT 1", object: "view v is not part of the schema"),
  ]

  @Test(arguments: tamperings)
  func aTamperedSchemaIsRefusedUntouchedAndNamed(_ tampering: Tampering) async throws {
    try makeClosedStore()
    try await ProcessRunner.sqlite3(path, tampering.sql)
    let before = try #require(fileBytes(path))
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: path) }
    #expect(error.code == .tamperedSchema)
    #expect(error.message.contains(tampering.object), "\(error.message)")
    #expect(error.message.contains("restore the file from a backup"), "\(error.message)")
    #expect(error.description.contains(path))
    #expect(fileBytes(path) == before)

    // A read-only open succeeds so that check() can report it; every read refuses.
    let reader = try SessionStore(path: path, options: .init(readOnly: true))
    let read = try #require(throws: SessionStorageError.self) { try reader.state }
    #expect(read.code == .tamperedSchema)
    #expect(throws: SessionStorageError.self) { try reader.history() }
    #expect(throws: SessionStorageError.self) { try reader.snapshotAndChanges() }
    let items = try reader.check()
    let schema = try #require(items.first { $0.check == .schema })
    #expect(schema.verdict == .failed)
    #expect(schema.detail.contains(tampering.object), "\(schema.detail)")
    #expect(items.first { $0.check == .migrations }?.verdict == .passed)
    #expect(fileBytes(path) == before)
  }

  @Test func theMigrationsTriggerRecreatedByHandIsAccepted() async throws {
    try makeClosedStore()
    let sql = Self.feedTriggerSQL
    #expect(sql.hasSuffix("END;"))
    // Spacing and the case of keywords do not matter; the statement's meaning does.
    let respaced = sql.replacingOccurrences(of: "\n  ", with: "\n\t   ").replacingOccurrences(
      of: "CREATE TRIGGER", with: "create   trigger")
    try await ProcessRunner.sqlite3(path, "DROP TRIGGER accounts_external_update; \(respaced)")
    let store = try SessionStore(path: path)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'bob'")
    #expect(try store.history().map(\.after.username) == ["alice", "bob"])
  }

  @Test func statisticsFromAnalyzeAreNotTampering() async throws {
    try makeClosedStore()
    try await ProcessRunner.sqlite3(path, "ANALYZE; PRAGMA optimize;")
    #expect(try await SessionStore(path: path).rename(to: "bob")?.cursor == Cursor(2))
  }

  @Test func aWriteOnlyReturnsTheEntryItCreated() async throws {
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    let first = try #require(try await store.logIn(as: "alice"))
    #expect(first.cursor == Cursor(1))
    // Changed while the store is open: the write must not report change 1 as its own.
    try await ProcessRunner.sqlite3(path, "DROP TRIGGER accounts_external_update")
    let error = try #require(throws: SessionStorageError.self) { try store.blocking.rename(to: "bob") }
    #expect(error.code == .tamperedSchema)
    #expect(error.message.contains("accounts_external_update"))
    #expect(try await ProcessRunner.sqlite3(path, "SELECT username FROM session") == "alice\n")
  }
}
