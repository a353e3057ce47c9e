import CSQLite
import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The file format: migrations, refusals, the trigger, and what the sqlite3 shell sees.
@Suite struct SchemaTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// A store file, closed, with every change checkpointed into the main file.
  func makeClosedStore(_ prepare: (SessionStore) throws -> Void = { _ in }) throws {
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try prepare(store)
  }

  /// The rows the build machine's SQLite stored for the migrations (embedded by the
  /// EmbedMigrations plugin, what a file is accepted by without building the reference) are
  /// the ones this SQLite stores: a file is never accepted by them that the reference, built
  /// here, would refuse.
  @Test func theRowsEmbeddedAtBuildTimeAreTheOnesThisSQLiteMakes() throws {
    let reference = try #require(Schema.expectedRows)
    #expect(Schema.builtRows.count == Migrator.known.count + 1)
    for (level, (built, made)) in zip(Schema.builtRows, reference).enumerated() where built != made {
      let first = zip(built, made).first { $0 != $1 }.map { "\($0.0.name) ≠ \($0.1.name)" } ?? "the counts"
      Issue.record(
        "after \(level) migrations: \(built.count) rows embedded, \(made.count) made; first difference: \(first)"
      )
    }
  }

  @Test func migrationsApplyOnceAndAReopenAppliesNothing() async throws {
    let first = try SessionStore(path: path)
    #expect(first.appliedMigrations == Migrator.known)
    #expect(Migrator.known.map(\.version) == Array(1...Migrator.known.count))
    let second = try SessionStore(path: path)
    #expect(second.appliedMigrations.isEmpty)
    #expect(
      try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM schema_migrations")
        == "\(Migrator.known.count)\n"
    )
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA user_version") == "\(Migrator.known.count)\n")
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA journal_mode") == "wal\n")
  }

  @Test func theRecordedChecksumIsTheSHA256OfTheMigrationFile() async throws {
    try makeClosedStore()
    let recorded = try await ProcessRunner.sqlite3(
      path, "SELECT checksum FROM schema_migrations WHERE version = 1")
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("migrations/0001_session_and_feed.sql").path
    let expected = try await ProcessRunner.run("/usr/bin/sha256sum", [source]).stdout.prefix(64)
    #expect(recorded.trimmingCharacters(in: .whitespacesAndNewlines) == String(expected))
  }

  /// How a file is spoiled before a refused open, and the error it must give.
  struct Refusal: Sendable, CustomTestStringConvertible {
    let name: String
    let spoil: @Sendable (String) async throws -> Void
    let code: SessionStorageError.Code
    let message: String
    var testDescription: String { name }
  }

  static let refusals: [Refusal] = [
    Refusal(
      name: "newer schema", spoil: { try await ProcessRunner.sqlite3($0, "PRAGMA user_version = 99") },
      code: .newerSchema,
      message: "newer than this build knows"),
    Refusal(
      name: "newer migration record",
      spoil: {
        try await ProcessRunner.sqlite3(
          $0, "INSERT INTO schema_migrations VALUES (5, '0005_future', 'abc', '2030-01-01T00:00:00.000Z')")
      }, code: .newerSchema, message: "0005_future"),
    Refusal(
      name: "checksum mismatch",
      spoil: { try await ProcessRunner.sqlite3($0, "UPDATE schema_migrations SET checksum = 'deadbeef'") },
      code: .checksumMismatch, message: "does not match"),
    Refusal(
      name: "not a database",
      spoil: {
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }).write(
          to: URL(fileURLWithPath: $0))
      },
      code: .notADatabase, message: "not a SQLite database"),
    Refusal(
      name: "someone else's database",
      spoil: {
        try FileManager.default.removeItem(atPath: $0)
        try await ProcessRunner.sqlite3($0, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
      }, code: .foreignDatabase, message: "no schema_migrations table"),
    Refusal(
      name: "empty file", spoil: { try Data().write(to: URL(fileURLWithPath: $0)) }, code: .notADatabase,
      message: "empty"),
  ]

  @Test(arguments: refusals)
  func refusedFilesStayByteIdentical(_ refusal: Refusal) async throws {
    try makeClosedStore { try $0.blocking.logIn(as: "alice") }
    try await refusal.spoil(path)
    let before = try #require(fileBytes(path))
    let error = try #require(throws: SessionStorageError.self) { try SessionStore(path: path) }
    #expect(error.code == refusal.code)
    #expect(error.path == path)
    #expect(error.description.contains(path))
    #expect(error.message.contains(refusal.message))
    #expect(fileBytes(path) == before)
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "after the read-write open")
    // A read-only open refuses the same way.
    let readOnly = try #require(throws: SessionStorageError.self) {
      try SessionStore(path: path, options: .init(readOnly: true))
    }
    #expect(readOnly.code == refusal.code)
    #expect(fileBytes(path) == before)
    // SQLite's WAL machinery may leave an empty -wal behind a read-only reader; never content.
    #expect(fileBytes(path + "-wal").map(\.isEmpty) ?? true)
  }

  @Test func readOnlyOpenOfAMissingFileCreatesNothing() throws {
    let error = try #require(throws: SessionStorageError.self) {
      try SessionStore(path: path, options: .init(readOnly: true))
    }
    #expect(error.code == .notFound)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func readOnlyOpenRefusesAFileThatNeedsMigrating() async throws {
    try await ProcessRunner.sqlite3(path, "PRAGMA user_version = 0")  // an empty database: no tables yet
    let error = try #require(throws: SessionStorageError.self) {
      try SessionStore(path: path, options: .init(readOnly: true))
    }
    #expect(error.code == .needsMigration)
    #expect(try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM sqlite_master") == "0\n")
  }

  @Test func aSqlite3ShellUpdateWritesExactlyOneExternalChange() async throws {
    try makeClosedStore()
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'mark', is_logged_in = 1")
    let rows = try await ProcessRunner.sqlite3(
      path,
      "SELECT seq, origin, old_username, new_username, old_is_logged_in, new_is_logged_in FROM session_changes"
    )
    #expect(rows == "1|external||mark|0|1\n")
    #expect(
      try await ProcessRunner.sqlite3(path, "SELECT account_id, was_active, is_active FROM session_changes")
        == "1|0|1\n")
  }

  @Test func aLibraryWriteNamesItsOrigin() async throws {
    try makeClosedStore { try $0.blocking.logIn(as: "alice") }
    #expect(try await ProcessRunner.sqlite3(path, "SELECT origin FROM session_changes") == "test\n")
  }

  @Test func aNoOpUpdateAddsNoRow() async throws {
    try makeClosedStore { try $0.blocking.logIn(as: "alice") }
    try await ProcessRunner.sqlite3(
      path, "UPDATE session SET username = username, is_logged_in = is_logged_in")
    try await ProcessRunner.sqlite3(path, "UPDATE accounts SET updated_at = updated_at, seq = seq")
    try await ProcessRunner.sqlite3(path, "UPDATE active_account SET account_id = account_id")
    #expect(try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM session_changes") == "1\n")
  }

  @Test func deletingTheRowOrAddingASecondIsRefused() async throws {
    try makeClosedStore()
    let delete = try await ProcessRunner.run("/usr/bin/sqlite3", [path, "DELETE FROM session"])
    #expect(delete.status != 0)
    #expect(delete.stderr.contains("DELETE FROM accounts to remove one"))
    let insert = try await ProcessRunner.run(
      "/usr/bin/sqlite3", [path, "INSERT INTO session (id) VALUES (2)"])
    #expect(insert.status != 0)
    #expect(try await ProcessRunner.sqlite3(path, "SELECT count(*) FROM session") == "1\n")
    for sql in ["DELETE FROM active_account", "INSERT INTO active_account (id) VALUES (2)"] {
      #expect(try await ProcessRunner.run("/usr/bin/sqlite3", [path, sql]).status != 0, "\(sql)")
    }
    let badState = try await ProcessRunner.run(
      "/usr/bin/sqlite3", [path, "UPDATE session SET is_logged_in = 2"])
    #expect(badState.status != 0)
  }

  @Test func aRolledBackWriteLeavesNoRowAndNoGap() async throws {
    let store = try SessionStore(path: path)
    let first = try #require(try await store.logIn(as: "alice"))
    try await ProcessRunner.sqlite3(path, "BEGIN; UPDATE session SET username = 'ghost'; ROLLBACK;")
    let connection = try Connection(path: path, mode: .readWrite)
    struct Abort: Error {}
    #expect(throws: Abort.self) {
      try connection.transaction(.immediate) {
        try connection.run("UPDATE session SET username = 'phantom'")
        throw Abort()
      }
    }
    let second = try #require(try await store.rename(to: "bob"))
    #expect(second.cursor == first.cursor.next)
    #expect(try store.history().map(\.after.username) == ["alice", "bob"])
  }

  @Test func newFilesAreCreatedPrivate() throws {
    let store = try SessionStore(path: path)
    try store.blocking.logIn(as: "alice")
    for file in [path, path + "-wal", path + "-shm"] {
      let attributes = try FileManager.default.attributesOfItem(atPath: file)
      #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file)")
    }
  }

  @Test func cursorsNeverRepeatAfterEveryChangeRowIsDeleted() async throws {
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    try await store.logOut()
    let last = try #require(try await store.logIn(as: "bob"))
    try await ProcessRunner.sqlite3(path, "DELETE FROM session_changes")
    let next = try #require(try await store.logOut())
    #expect(next.cursor == last.cursor.next)
    let compacted = try store.compact(keepingLast: 0)
    #expect(compacted.bounds.head == next.cursor)
    #expect(try await store.logIn(as: "carol")?.cursor == next.cursor.next)
  }
}
