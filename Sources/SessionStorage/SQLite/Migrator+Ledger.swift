extension Migrator {
  /// Throws when `schema_migrations` (`ledger` rows), `PRAGMA user_version` and the tables
  /// present do not tell the same story, naming all three and the SQL that repairs the file.
  ///
  /// Each is compared with the schema this build creates after 0, 1, 2 … migrations: the
  /// number whose schema the file holds says which record was edited by hand. Nothing is
  /// repaired automatically: the file is refused untouched, and the message ends with the
  /// SQL that repairs it.
  static func verifyAgreement(ledger: Int, userVersion: Int64, on connection: Connection) throws {
    if Int64(ledger) == userVersion, try Schema.differences(on: connection, applied: ledger).isEmpty {
      return
    }
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
    if userVersion != Int64(matching) { causes.append("PRAGMA user_version was changed by hand") }
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
