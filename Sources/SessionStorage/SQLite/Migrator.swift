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
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('session', 'session_changes')")
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
    try verifyAgreement(ledger: applied.count, userVersion: userVersion, on: connection)
    if verifyingSchema { try Schema.verify(on: connection, applied: applied.count) }
    return Array(known.dropFirst(applied.count))
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
    // Nothing was committed since the schema was found intact: not even the version is read.
    let dataVersion = connection.fileDataVersion
    if let dataVersion, dataVersion == connection.verifiedDataVersion { return }
    let version = try connection.scalarInt(schemaVersionSQL)
    if version == nil || version != connection.verifiedSchemaVersion {
      _ = try pending(on: connection)
      connection.verifiedSchemaVersion = version
    }
    connection.verifiedDataVersion = dataVersion
  }

  /// Runs `body` in an IMMEDIATE transaction that first verifies the schema
  /// (``reverify(_:)``). `body` changes no schema (the store's writes and deletes), so the
  /// verification outlives its commit: the connection's next write skips even the
  /// `PRAGMA schema_version` read unless another connection committed in between.
  static func verifiedWrite<Result>(_ connection: Connection, _ body: () throws -> Result) throws -> Result {
    let result = try connection.transaction(.immediate) { () throws -> Result in
      try reverify(connection)
      return try body()
    }
    // Nothing but `body` ran since the check, under the write lock.
    connection.verifiedDataVersion = connection.fileDataVersion
    return result
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
    try connection.execute(
      """
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        checksum TEXT NOT NULL,
        applied_at TEXT NOT NULL
      )
      """)
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
