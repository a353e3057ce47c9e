internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Applies the embedded migrations, and refuses files it must not touch.
enum Migrator {
  /// Every migration this build knows, oldest first.
  static let known = EmbeddedMigrations.all

  /// Inspects the file behind `connection` and returns the migrations it lacks. Writes nothing.
  /// Throws for a file that is not ours, comes from a newer schema, was migrated by other
  /// SQL than this build's, whose migration records (`schema_migrations`, `PRAGMA
  /// user_version` and the tables present) disagree, or (unless `verifyingSchema` is false)
  /// whose tables, indexes, triggers and views differ from the ones its applied migrations
  /// create.
  static func pending(on connection: Connection, verifyingSchema: Bool = true) throws -> [Migration] {
    let path = connection.path
    let userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
    guard userVersion <= known.count else {
      throw SessionStorageError(
        .newerSchema,
        "the schema is at version \(userVersion), newer than this build knows (\(known.count)); upgrade sessionctl",
        path: path)
    }
    let tables =
      try connection.scalarInt(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
      ?? 0
    let hasLedger =
      try connection.scalarInt(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") == 1
    if tables == 0 {
      if verifyingSchema { try Schema.verify(on: connection, applied: 0) }  // no view or index either
      return known
    }
    guard hasLedger else {
      if try connection.scalarInt(
        "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name IN ('session', 'session_changes')"
      )
        == 2
      {
        throw SessionStorageError(
          .inconsistentMigrations, missingLedgerMessage(userVersion: userVersion, on: connection), path: path)
      }
      throw SessionStorageError(
        .foreignDatabase,
        "this SQLite database has \(tables) table(s) but no schema_migrations table: it is not a session store",
        path: path)
    }
    let applied = try records(on: connection)
    try validate(applied, on: connection)
    // The file's schema compared with the one its ledger names, read once: the agreement of
    // the records and the schema verification both judge these differences.
    let differences =
      verifyingSchema || Int64(applied.count) == userVersion
      ? try Schema.differences(on: connection, applied: applied.count) : []
    try verifyAgreement(
      ledger: applied.count, userVersion: userVersion, differences: differences, on: connection)
    if verifyingSchema { try Schema.verify(differences, path: path) }
    return Array(known.dropFirst(applied.count))
  }

  /// What an inspection found: the pending migrations, and the `PRAGMA data_version` of the
  /// read transaction that found them.
  struct Inspection {
    var pending: [Migration]
    var dataVersion: Int64?
  }

  /// ``pending(on:verifyingSchema:)`` in one read transaction (one snapshot of the file, one
  /// read lock), with the `PRAGMA data_version` of that snapshot. Writes nothing.
  static func inspect(_ connection: Connection) throws -> Inspection {
    try connection.transaction(.deferred) {
      let version = try connection.scalarInt(SessionLog.dataVersionSQL)
      return Inspection(pending: try pending(on: connection), dataVersion: version)
    }
  }

  /// Prepares a writer whose file ``inspect(_:)`` found up to date: the schema version it
  /// verified is remembered (as ``reverify(_:)`` does) and true is returned, when no other
  /// connection committed since the inspection. Otherwise returns false and the caller
  /// migrates and verifies again.
  ///
  /// `PRAGMA data_version` moves with every commit of another connection, and this connection
  /// changed nothing the inspection read (the ledger, `user_version`, `sqlite_master`): an
  /// unmoved version means the file holds what the inspection judged, so ``migrate(_:now:)``
  /// would find nothing pending and ``reverify(_:)`` nothing wrong.
  static func adoptInspection(_ inspection: Inspection, on connection: Connection) throws -> Bool {
    guard inspection.pending.isEmpty, let inspected = inspection.dataVersion else { return false }
    return try connection.transaction(.deferred) {
      guard try connection.scalarInt(SessionLog.dataVersionSQL) == inspected else { return false }
      connection.verifiedSchemaVersion = try connection.scalarInt(schemaVersionSQL)
      return true
    }
  }

  /// Throws when the migration records differ from this build's migrations: one newer than
  /// this build, a checksum or name that differs, or versions that are not 1, 2, 3 … in
  /// order (a row deleted or renumbered by hand).
  private static func validate(
    _ applied: [(version: Int, name: String, checksum: String, appliedAt: String)], on connection: Connection
  ) throws {
    let path = connection.path
    for (index, record) in applied.enumerated() {
      guard record.version <= known.count else {
        throw SessionStorageError(
          .newerSchema,
          "migration \(record.version) (\(record.name)) is newer than this build knows (\(known.count)); upgrade sessionctl",
          path: path)
      }
      guard record.version == index + 1 else {
        throw SessionStorageError(
          .inconsistentMigrations,
          "schema_migrations lists migration \(record.version) (\(record.name)) where migration \(index + 1) "
            + "belongs: its versions must be 1, 2, 3 … without a gap, and were edited by hand. Restore the file "
            + "from a backup, or repair the rows with the sqlite3 shell: UPDATE schema_migrations SET version = "
            + "\(index + 1) WHERE name = '\(record.name.replacingOccurrences(of: "'", with: "''"))'",
          path: path)
      }
      let migration = known[index]
      guard migration.checksum == record.checksum, migration.name == record.name else {
        throw SessionStorageError(
          .checksumMismatch,
          "applied migration \(record.version) (\(record.name)) does not match this build's \(migration.name): "
            + "checksum \(record.checksum.prefix(12)) ≠ \(migration.checksum.prefix(12))",
          path: path)
      }
    }
  }

  /// Verifies the schema again when `PRAGMA schema_version` moved since it was last found
  /// intact on this connection (another client changed the schema while the store was
  /// open). Run it inside the transaction that relies on the schema.
  static func reverify(_ connection: Connection) throws {
    let version = try connection.scalarInt(schemaVersionSQL)
    if version == nil || version != connection.verifiedSchemaVersion {
      _ = try pending(on: connection)
      connection.verifiedSchemaVersion = version
    }
  }

  /// Runs `body` in an IMMEDIATE transaction that first verifies the schema
  /// (``reverify(_:)``): the store's writes and deletes.
  static func verifiedWrite<Result>(_ connection: Connection, _ body: () throws -> Result) throws -> Result {
    try connection.transaction(.immediate) { () throws -> Result in
      try reverify(connection)
      return try body()
    }
  }

  private static let schemaVersionSQL = SQL("PRAGMA schema_version")

  /// Applies each pending migration in its own IMMEDIATE transaction, records it, and
  /// mirrors the newest version in `PRAGMA user_version`. Returns what ran.
  static func migrate(_ connection: Connection, now: () -> String = Timestamp.now) throws -> [Migration] {
    var ran: [Migration] = []
    for migration in try pending(on: connection) {
      let applied = try connection.transaction(.immediate) { () throws -> Bool in
        // Another process may have migrated between our inspection and this lock.
        guard try pending(on: connection).first == migration else { return false }
        try apply(migration, on: connection, now: now)
        return true
      }
      if applied { ran.append(migration) }
    }
    return ran
  }

  /// Applies one migration and records it, inside the caller's transaction.
  static func apply(_ migration: Migration, on connection: Connection, now: () -> String) throws {
    try connection.execute(EmbeddedMigrations.ledger)
    try connection.execute(migration.sql)
    try connection.run(
      "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
      [
        .integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum),
        .text(now()),
      ])
    try connection.execute("PRAGMA user_version = \(migration.version)")
  }

  /// The migrations recorded in the file, oldest first.
  static func records(on connection: Connection) throws -> [(
    version: Int, name: String, checksum: String, appliedAt: String
  )] {
    try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
    {
      statement in
      var rows: [(version: Int, name: String, checksum: String, appliedAt: String)] = []
      while try statement.step() {
        rows.append(
          (
            Int(statement.int64(at: 0)), statement.lossyText(at: 1) ?? "", statement.lossyText(at: 2) ?? "",
            statement.lossyText(at: 3) ?? ""
          ))
      }
      return rows
    }
  }
}

extension Migrator {
  /// Throws when `schema_migrations` (`ledger` rows), `PRAGMA user_version` and the tables
  /// present do not tell the same story, naming all three and the SQL that repairs the file.
  ///
  /// Each is compared with the schema this build creates after 0, 1, 2 … migrations: the
  /// number whose schema the file holds says which record was edited by hand. Nothing is
  /// repaired automatically: the file is refused untouched, and the message ends with the
  /// SQL that repairs it.
  /// `differences` are the file's schema compared with the one `ledger` migrations create
  /// (read only when `ledger` equals `userVersion`).
  static func verifyAgreement(
    ledger: Int, userVersion: Int64, differences: [Schema.Difference], on connection: Connection
  ) throws {
    if Int64(ledger) == userVersion, differences.isEmpty { return }
    let matching = try matchingCount(on: connection)
    guard Int64(ledger) != userVersion || (matching != nil && matching != ledger) else { return }
    var message =
      "the migration records disagree: schema_migrations records \(count(ledger)), PRAGMA user_version "
      + "is \(userVersion), and the tables, indexes and triggers are "
      + (matching.map { "those of \(count($0))" } ?? "those of no number of this build's migrations")
    guard let matching, matching >= ledger else {
      message += ". Restore the file from a backup"
      throw SessionStorageError(.inconsistentMigrations, message, path: connection.path)
    }
    var repairs: [String] = []
    if matching > ledger { repairs += known[ledger..<matching].map(insertSQL) }
    if userVersion != Int64(matching) { repairs.append("PRAGMA user_version = \(matching)") }
    var causes: [String] = []
    if matching > ledger { causes.append("rows of schema_migrations were deleted by hand") }
    if userVersion == 0 && matching > 0 {
      // The sqlite3 shell's `.dump` writes no `PRAGMA user_version`: a file rebuilt from a
      // dump has 0 and everything else.
      causes.append(
        "the file was rebuilt from the sqlite3 shell's .dump (which leaves PRAGMA user_version out), "
          + "or PRAGMA user_version was reset by hand")
    } else if userVersion != Int64(matching) {
      causes.append("PRAGMA user_version was changed by hand")
    }
    message +=
      ": " + causes.joined(separator: " and ")
      + ". Restore the file from a backup, or repair it with the sqlite3 shell: "
      + repairs.joined(separator: "; ")
    throw SessionStorageError(.inconsistentMigrations, message, path: connection.path)
  }

  /// The message for a store whose `schema_migrations` table is gone while its tables are
  /// there.
  static func missingLedgerMessage(userVersion: Int64, on connection: Connection) -> String {
    // Harmless to swallow: this only words a refusal already decided; a comparison that
    // cannot run counts as "no match".
    let matching = (1...max(1, known.count)).last { count in
      (try? Schema.differences(on: connection, applied: count, ignoringLedger: true).isEmpty) ?? false
    }
    var message =
      "the schema_migrations table is missing, but the tables of a session store are there "
      + "(PRAGMA user_version is \(userVersion)): it was dropped by hand. Restore the file from a backup"
    if let matching {
      message +=
        ", or re-create it with the sqlite3 shell: CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
        + "name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL); "
        + (known.prefix(matching).map(insertSQL) + ["PRAGMA user_version = \(matching)"]).joined(
          separator: "; ")
    }
    return message
  }

  /// The number of migrations whose schema the file holds exactly, if any.
  private static func matchingCount(on connection: Connection) throws -> Int? {
    try (0...known.count).first { try Schema.differences(on: connection, applied: $0).isEmpty }
  }

  /// `1 migration (0001_session_and_feed)`, `0 migrations`.
  private static func count(_ number: Int) -> String {
    let names = known.prefix(number).map(\.name).joined(separator: ", ")
    return "\(number) migration\(number == 1 ? "" : "s")" + (names.isEmpty ? "" : " (\(names))")
  }

  /// The row that records `migration`, as the migrator writes it.
  private static func insertSQL(_ migration: Migration) -> String {
    "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES "
      + "(\(migration.version), '\(migration.name)', '\(migration.checksum)', '\(Timestamp.now())')"
  }
}

extension Migrator {
  /// Creates a new store at `path` atomically: the database is built and migrated in a
  /// private file beside it, then hard-linked into place. No process ever sees a half-made
  /// (empty, unmigrated) file, and when several create the same path at once one link wins
  /// and the others open its result. Returns the migrations applied, or nothing when
  /// another process won.
  ///
  /// The private file is migrated without a rollback journal (a failure discards it) and
  /// switched to WAL last, then closed before SQLite opens a WAL: nothing but the file
  /// itself is ever made beside it, so a signal handler that removes it leaves nothing.
  static func create(_ path: String, _ durability: SessionStore.Durability) throws -> [Migration] {
    let staged = try StagedFile(beside: path, purpose: "creating", what: "the database file")
    defer { staged.discard() }
    let applied: [Migration]
    do {
      let connection = try Connection(path: staged.temporary, mode: .readWrite)
      defer { connection.close() }
      try connection.execute("PRAGMA journal_mode = OFF")
      applied = try migrate(connection)
      try connection.configure(durability)  // WAL in the header; the -wal is made by the next open
    } catch var error as SessionStorageError {
      error.path = path
      throw error
    }
    return try staged.place(overwrite: false, what: "the database file") ? applied : []
  }
}
