import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// An open inspects its file once: the writer adopts the first connection's inspection only
/// while no other connection committed since (`PRAGMA data_version`), and the schema's texts
/// are normalized through a table built from the reference that gives what normalizing gives.
@Suite(.timeLimit(.minutes(10))) struct OpenInspectionTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    try SessionStore(path: path, options: .init(origin: "test")).blocking.logIn(as: "alice")
  }

  /// What another connection commits between the inspection and the writer's preparation.
  struct Edit: Sendable, CustomTestStringConvertible {
    let name: String
    let sql: String
    var testDescription: String { name }
  }

  static let edits: [Edit] = [
    // `PRAGMA schema_version` does not move for these two: only `data_version` tells.
    Edit(
      name: "a ledger checksum edited", sql: "UPDATE schema_migrations SET checksum = 'x' WHERE version = 1"),
    Edit(name: "user_version changed", sql: "PRAGMA user_version = 1"),
    Edit(name: "the feed trigger dropped", sql: "DROP TRIGGER accounts_external_update"),
    Edit(name: "a shell write", sql: "UPDATE session SET username = 'bob' WHERE id = 1"),
  ]

  /// The inspecting connection, configured as a writer, with its inspection.
  func inspected() throws -> (Connection, Migrator.Inspection) {
    let connection = try Connection(path: path, mode: .readWrite)
    let inspection = try Migrator.inspect(connection)
    try connection.configure(.normal)
    return (connection, inspection)
  }

  @Test func anUntouchedFileKeepsItsInspectionAndRemembersTheVerifiedSchemaVersion() throws {
    let (connection, inspection) = try inspected()
    #expect(inspection.pending.isEmpty)
    #expect(connection.verifiedSchemaVersion == nil)
    #expect(try Migrator.adoptInspection(inspection, on: connection))
    #expect(connection.verifiedSchemaVersion == (try connection.scalarInt("PRAGMA schema_version")))
  }

  @Test(arguments: edits)
  func aCommitOfAnotherConnectionSinceTheInspectionMakesTheWriterInspectAgain(_ edit: Edit) throws {
    let (connection, inspection) = try inspected()
    let before = try connection.scalarInt("PRAGMA schema_version")
    try Connection(path: path, mode: .readWrite).execute(edit.sql)
    #expect(try !Migrator.adoptInspection(inspection, on: connection))
    #expect(connection.verifiedSchemaVersion == nil)
    if edit.name != "the feed trigger dropped" {
      #expect(try connection.scalarInt("PRAGMA schema_version") == before)
    }
  }

  @Test func aFileWithPendingMigrationsIsNeverAdopted() throws {
    let (connection, inspection) = try inspected()
    let pending = Migrator.Inspection(pending: [Migrator.known[0]], dataVersion: inspection.dataVersion)
    #expect(try !Migrator.adoptInspection(pending, on: connection))
  }

  @Test(arguments: edits)
  func anOpenRefusesWhatTheSlowPathRefuses(_ edit: Edit) throws {
    try Connection(path: path, mode: .readWrite).execute(edit.sql)
    let slow = Result { try Migrator.pending(on: Connection(path: path, mode: .readOnly)) }
    let opened = Result { try SessionStore(path: path).appliedMigrations }
    switch (slow, opened) {
    case (.success(let pending), .success(let applied)):
      #expect(pending.isEmpty && applied.isEmpty)
    case (.failure(let expected as SessionStorageError), .failure(let refused as SessionStorageError)):
      #expect(refused.code == expected.code)
      #expect(refused.message == expected.message)
    default:
      Issue.record("the inspection gave \(slow), the open \(opened)")
    }
  }

  @Test func theTableOfNormalizedTextsGivesWhatNormalizingGives() throws {
    let schemas = try Schema.expected.get()
    let store = try Connection(path: path, mode: .readOnly)
    let texts = try store.query("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL") { statement in
      var texts: [String] = []
      while try statement.step() { texts.append(statement.lossyText(at: 0) ?? "") }
      return texts
    }
    #expect(texts.count == schemas.last?.filter { $0.sql != nil }.count)
    // The file's objects read through the table equal those normalized one by one, and
    // equal the reference's.
    let table = try #require(Schema.normalizedTexts)
    #expect(texts.allSatisfy { table[$0] == Schema.normalized($0) })
    #expect(try Schema.objects(on: store, normalizedTexts: table) == Schema.objects(on: store))
    #expect(try Schema.objects(on: store, normalizedTexts: table) == schemas.last)
  }

  @Test func aFileTheMigrationsMadeHoldsTheReferenceRowsAndARespacedTriggerIsComparedNormalized() throws {
    let file = try Connection(path: path, mode: .readWrite)
    let applied = Migrator.known.count
    #expect(try Schema.rows(on: file) == Schema.expectedRows?[applied])
    #expect(try Schema.differences(on: file, applied: applied).isEmpty)
    let trigger = try #require(
      try file.scalarText(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'accounts_external_update'"))
    let respaced = trigger.replacingOccurrences(of: "\n", with: "\n\t  ").replacingOccurrences(
      of: "BEGIN", with: "begin")
    try file.execute("BEGIN IMMEDIATE; DROP TRIGGER accounts_external_update; \(respaced); COMMIT")
    #expect(try Schema.rows(on: file) != Schema.expectedRows?[applied])
    #expect(try Schema.differences(on: file, applied: applied).isEmpty)
    #expect(try Schema.objects(on: file) == Schema.expected.get()[applied])
  }
}
