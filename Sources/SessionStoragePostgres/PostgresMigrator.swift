import SessionStorage

/// Creates the store's schema and applies `migrations/postgres/*.sql`, with the same
/// refusals as the SQLite store: a schema holding someone else's tables, a newer schema,
/// applied migrations whose checksums differ from this build's.
///
/// Everything happens in one transaction under `pg_advisory_xact_lock` on the schema's
/// name, so two processes opening a new schema at once do not race: the second waits, then
/// finds the migrations applied.
enum PostgresMigrator {
  /// Every migration this build knows, oldest first.
  static let known = EmbeddedMigrations.all

  /// The ledger, the same table and columns as the SQLite file's.
  static let ledgerSQL = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL
    )
    """

  /// Opens the store's schema: creates and migrates it (`readOnly` false), or only verifies
  /// it (`readOnly`). Returns the migrations applied.
  static func open(_ connection: PQConnection, readOnly: Bool) throws -> [Migration] {
    if readOnly {
      let pending = try inspect(connection)
      guard pending.isEmpty else {
        throw SessionStorageError(
          pending.count == known.count ? .notFound : .needsMigration,
          pending.count == known.count
            ? "schema \(connection.place.schema) holds no session store, and a read-only store does not create one"
            : "schema \(connection.place.schema) needs \(pending.count) migration(s) "
              + "(\(pending.map(\.name).joined(separator: ", "))), and a read-only store does not migrate",
          path: connection.place.described)
      }
      return []
    }
    // Fast path: nothing to do, no lock taken.
    if (try? inspect(connection))?.isEmpty == true { return [] }
    try connection.begin()
    do {
      try connection.query(
        "SELECT pg_advisory_xact_lock(hashtext($1))", ["SessionStorage " + connection.place.schema])
      // Only when missing: CREATE SCHEMA needs a privilege that using an existing one does not.
      if try connection.scalar("SELECT 1 FROM pg_namespace WHERE nspname = $1", [connection.place.schema])
        == nil
      {
        try connection.execute("CREATE SCHEMA \(connection.place.quotedSchema)")
      }
      let pending = try inspect(connection)
      if !pending.isEmpty { try connection.execute(ledgerSQL) }
      for migration in pending {
        try connection.execute(migration.sql)
        try connection.query(
          "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, now())",
          [String(migration.version), migration.name, migration.checksum])
      }
      try connection.execute("COMMIT")
      return pending
    } catch {
      try? connection.execute("ROLLBACK")
      throw error
    }
  }

  /// The migrations the schema lacks (all of them for a missing or empty schema). Writes
  /// nothing.
  /// A schema this role may not use is refused as such, not taken for an empty one.
  static func inspect(_ connection: PQConnection) throws -> [Migration] {
    let place = connection.place
    // pg_namespace and pg_class list what exists whatever this role may use (unlike
    // information_schema, which hides what it has no privilege on).
    if let usage = try connection.query(
      "SELECT has_schema_privilege(oid, 'USAGE'), current_user FROM pg_namespace WHERE nspname = $1",
      [place.schema]
    ).rows.first, usage[0] == "f" {
      let role = usage[1] ?? "this role"
      throw SessionStorageError(
        .permissionDenied, "role \(role) may not use schema \(place.schema). " + grants(to: role, in: place),
        path: place.described)
    }
    let tables = try connection.query(
      "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        + "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname",
      [place.schema]
    ).rows.compactMap { $0[0] }
    if tables.isEmpty { return known }
    guard tables.contains("schema_migrations") else {
      throw SessionStorageError(
        .foreignDatabase,
        "schema \(place.schema) has \(tables.count) table(s) (\(tables.prefix(5).joined(separator: ", "))) but no "
          + "schema_migrations table: it is not a session store; name another schema with ?schema=",
        path: place.described)
    }
    let applied = try records(connection)
    for (index, record) in applied.enumerated() {
      guard record.version <= known.count else {
        throw SessionStorageError(
          .newerSchema,
          "migration \(record.version) (\(record.name)) of schema \(place.schema) is newer than this build knows "
            + "(\(known.count)); upgrade this program",
          path: place.described)
      }
      let migration = known[index]
      guard record.version == index + 1, migration.checksum == record.checksum, migration.name == record.name
      else {
        throw SessionStorageError(
          .checksumMismatch,
          "applied migration \(record.version) (\(record.name)) of schema \(place.schema) does not match this "
            + "build's \(migration.name): checksum \(record.checksum.prefix(12)) ≠ \(migration.checksum.prefix(12))",
          path: place.described)
      }
    }
    return Array(known.dropFirst(applied.count))
  }

  /// What the schema's owner runs to let `role` in, as SQL: exactly the privileges a store
  /// uses. A reader selects; a writer also changes the roster (`accounts`, `active_account`)
  /// and claims the `session_writer` row (the triggers run as the owner and write the feed
  /// themselves), and deletes feed rows to compact.
  static func grants(to role: String, in place: PostgresPlace) -> String {
    let lower = role.unicodeScalars.allSatisfy {
      ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
    }
    let grantee = lower && !role.isEmpty ? role : PostgresPlace.quoted(role)
    let schema = place.quotedSchema
    return
      "Its owner can let it read with GRANT USAGE ON SCHEMA \(schema) TO \(grantee); GRANT SELECT ON ALL "
      + "TABLES IN SCHEMA \(schema) TO \(grantee); and also write and compact with GRANT INSERT, UPDATE, DELETE ON "
      + "TABLE \(schema).accounts TO \(grantee); GRANT UPDATE ON TABLE \(schema).active_account, "
      + "\(schema).session_writer TO \(grantee); GRANT DELETE ON TABLE \(schema).session_changes TO \(grantee);"
  }

  /// The migrations recorded in the schema, oldest first.
  static func records(_ connection: PQConnection) throws -> [(version: Int, name: String, checksum: String)] {
    try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").rows.map {
      (Int($0[0] ?? "") ?? 0, $0[1] ?? "", $0[2] ?? "")
    }
  }
}
