import Foundation
import SessionStorage
import SessionStoragePostgres
import SystemKit
import ToolingKit

extension SessionStore {
  /// Whether this instance was opened read-only: the driver expects its writes refused.
  var isReadOnly: Bool { backend.isReadOnly }
  /// The origin of its writes.
  var origin: String { backend.origin }
}

/// Where the chaos driver's store lives, and how an outside client reaches it there: the
/// `sqlite3` shell for a file, `psql` for a schema of a PostgreSQL server. The SQL both
/// clients run differs only where the dialects do; the steps and the model are the same.
enum ChaosBackend {
  case sqlite
  /// A schema of the server at `server` (a libpq URL, without `schema`), read with `psql`.
  case postgres(server: String, schema: String, psql: String)

  /// The backend of `--db`: PostgreSQL for a `postgresql://` or `postgres://` URL, whose
  /// `schema` is set to `schema` (each run gets a schema of its own); else a file.
  /// Returns the name the driver's stores, processes and `sessionctl` open.
  static func of(_ db: String, schema: String) throws -> (backend: ChaosBackend, name: String) {
    guard PostgresLocation.isURL(db) else { return (.sqlite, db) }
    guard !db.contains("schema=") else {
      throw TortureFailure(
        "--db names its own schema: the chaos driver makes a schema of its own for every run, give the "
          + "server's URL alone")
    }
    let psql =
      ["/usr/bin/psql", "/usr/local/bin/psql"].first { FileManager.default.isExecutableFile(atPath: $0) }
      ?? ((try? PostgresCluster.binDirectory()).map { $0 + "/psql" } ?? "psql")
    return (
      .postgres(server: db, schema: schema, psql: psql),
      db + (db.contains("?") ? "&" : "?") + "schema=" + schema
    )
  }

  var isPostgres: Bool { if case .postgres = self { true } else { false } }

  /// Opens an instance on `name` (a path or the store's URL).
  func open(
    _ name: String, origin: String, durability: SessionStore.Durability = .full, readOnly: Bool = false
  ) throws -> SessionStore {
    switch self {
    case .sqlite:
      return try SessionStore(
        path: name, options: ChaosWorld.options(origin: origin, durability: durability, readOnly: readOnly))
    case .postgres:
      return try SessionStore(
        postgresURL: name,
        options: .init(origin: origin, readOnly: readOnly, safetyPollInterval: ChaosWorld.safetyPoll))
    }
  }

  /// Runs `statements` in one client process (sqlite3 or psql): its output.
  func shell(_ path: String, _ statements: [String]) throws -> String {
    let (status, output, _) = try shellStatus(path, statements)
    guard status == 0 else {
      throw TortureFailure(
        "\(isPostgres ? "psql" : "sqlite3") failed on: \(statements.joined(separator: "; "))")
    }
    return output
  }

  /// Runs `statements` in one client process that stops at the first error: its exit
  /// status, its output and what it said on stderr.
  func shellStatus(_ path: String, _ statements: [String]) throws -> (
    status: Int32, output: String, errors: String
  ) {
    let errors = FileManager.default.temporaryDirectory.appendingPathComponent(
      "chaos-shell-\(getpid()).stderr"
    ).path
    defer { unlink(errors) }
    let child: ChildProcess
    switch self {
    case .sqlite:
      child = try ChaosWorld.spawn(
        "/usr/bin/sqlite3", ["-bail", "-cmd", ".timeout 30000", path, statements.joined(separator: "; ")],
        stderr: .file(errors))
    case .postgres(let server, let schema, let psql):
      child = try ChaosWorld.spawn(
        psql,
        [
          "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", server, "-c",
          "SET client_min_messages TO warning", "-c", "SET search_path TO \(schema)",
        ] + statements.flatMap { ["-c", $0] }, stderr: .file(errors))
    }
    let status = ChaosWorld.reap(child)
    return (
      status, child.lines.joined(separator: "\n"),
      (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
    )
  }

  func awaitConnectionsGone(origin: String) throws {
    guard isPostgres else { return }
    let deadline = Date().addingTimeInterval(10)
    let query =
      "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '\(origin)/%' AND pid <> pg_backend_pid()"
    while try shell("", [query]).trimmingCharacters(in: .whitespacesAndNewlines) != "0" {
      guard Date() < deadline else {
        throw TortureFailure("the server still has connections of the killed '\(origin)' writer after 10 s")
      }
      usleep(5000)
    }
  }

  /// Drops the run's schema (PostgreSQL); a file is removed by the next run.
  func dispose() {
    guard case .postgres(_, let schema, _) = self else { return }
    _ = try? shell("", ["DROP SCHEMA IF EXISTS \(schema) CASCADE"])
  }

  /// The newest cursor ever handed out, as the store computes it (compaction keeps it).
  var headSQL: String {
    switch self {
    case .sqlite:
      """
      SELECT max(coalesce((SELECT max(seq) FROM session_changes), 0),
        coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0))
      """
    case .postgres: "SELECT head FROM session"
    }
  }

  /// A feed row as one line: `seq|at|origin|old username|new username|old flag|new flag|old
  /// time|account|was active|is active`, text quoted as SQL literals (`NULL` or `'…'`), times
  /// as ISO-8601 UTC with milliseconds, flags as 0 or 1; the names the driver writes hold no
  /// `|`.
  var rowColumns: String {
    switch self {
    case .sqlite:
      """
      seq || '|' || at || '|' || quote(origin) || '|' || quote(old_username) || '|' || quote(new_username) \
      || '|' || old_is_logged_in || '|' || new_is_logged_in || '|' || old_updated_at || '|' || account_id \
      || '|' || was_active || '|' || is_active
      """
    case .postgres:
      """
      seq || '|' || \(Self.time("at")) || '|' || quote_nullable(origin) || '|' || quote_nullable(old_username) \
      || '|' || quote_nullable(new_username) || '|' || old_is_logged_in::int || '|' || new_is_logged_in::int \
      || '|' || \(Self.time("old_updated_at")) || '|' || account_id || '|' || was_active::int \
      || '|' || is_active::int
      """
    }
  }

  /// The session row as one line: `username|flag|time`, as ``rowColumns`` prints them.
  var sessionColumns: String {
    switch self {
    case .sqlite: "quote(username) || '|' || is_logged_in || '|' || updated_at"
    case .postgres:
      "quote_nullable(username) || '|' || is_logged_in::int || '|' || \(Self.time("updated_at"))"
    }
  }

  /// A timestamptz column as SQLite stores times: `2026-01-31T12:00:00.000Z`.
  private static func time(_ column: String) -> String {
    "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
  }

  /// The value of a login flag in an UPDATE.
  func flag(_ value: Bool) -> String {
    switch self {
    case .sqlite: value ? "1" : "0"
    case .postgres: value ? "true" : "false"
    }
  }

  /// How an outside client's write transaction begins.
  var begin: String { isPostgres ? "BEGIN" : "BEGIN IMMEDIATE" }
}
