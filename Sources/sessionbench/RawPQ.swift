import CLibPQ
import Foundation
import SessionStorage
import SessionStoragePostgres

/// A bare libpq connection for the PostgreSQL baselines: `PQ*` calls from Swift and nothing
/// on top, with `search_path` set to one schema and times in UTC, as the store's own
/// connections have them. Not thread-safe: each thread (or process) opens its own.
final class RawPQ {
  /// libpq's functions, loaded as the store loads them.
  let libpq: LibPQ
  let handle: OpaquePointer
  /// The statements prepared on this connection, by their SQL.
  private var statements: [String: String] = [:]

  /// Connects to `url` (a server URL without `schema`; a 5 s `connect_timeout` unless it sets
  /// one, as the store's default); with `schema`, selects it.
  init(url: String, schema: String? = nil) throws {
    let libpq = try LibPQ.load()
    self.libpq = libpq
    let connected = ["connect_timeout", "dbname"].withCStringArray(terminated: true) { keywords in
      ["5", url].withCStringArray(terminated: true) { values in libpq.PQconnectdbParams(keywords, values, 1) }
    }
    guard let handle = connected else { throw BenchError("libpq is out of memory") }
    guard libpq.PQstatus(handle) == CONNECTION_OK else {
      let message = Self.message(handle, libpq)
      libpq.PQfinish(handle)
      throw BenchError("cannot connect to \(PostgresLocation.redacted(url)): \(message)")
    }
    _ = libpq.PQsetNoticeProcessor(handle, { _, _ in }, nil)
    self.handle = handle
    if let schema { try exec("SET search_path TO \(Self.quoted(schema)); SET TIME ZONE 'UTC'") }
  }

  deinit { libpq.PQfinish(handle) }

  /// `name` as a quoted identifier.
  static func quoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// Runs SQL without values (one or more statements) with `PQexec`.
  func exec(_ sql: String) throws {
    let result = libpq.PQexec(handle, sql)
    defer { libpq.PQclear(result) }
    try check(result, sql)
  }

  /// Runs one statement, prepared on first use (`PQprepare`, then `PQexecPrepared`: text
  /// values, text results, as the store does), and calls `body` with its result, which is
  /// cleared afterwards.
  func query<Result>(_ sql: String, _ values: [String] = [], _ body: (OpaquePointer) -> Result) throws
    -> Result
  {
    if statements[sql] == nil {
      let prepared = libpq.PQprepare(handle, "raw_\(statements.count)", sql, Int32(values.count), nil)
      defer { libpq.PQclear(prepared) }
      try check(prepared, sql)
      statements[sql] = "raw_\(statements.count)"
    }
    let name = statements[sql] ?? ""
    let result = values.withCStringArray {
      libpq.PQexecPrepared(handle, name, Int32(values.count), $0, nil, nil, 0)
    }
    defer { libpq.PQclear(result) }
    try check(result, sql)
    guard let result else { throw BenchError("libpq returned no result for: \(sql)") }
    return body(result)
  }

  /// The first column of the first row of `sql` as an integer (0 for NULL or no row).
  func integer(_ sql: String) throws -> Int64 {
    try query(sql) { result in
      libpq.PQntuples(result) > 0 && libpq.PQgetisnull(result, 0, 0) == 0
        ? libpq.integer(result, 0, 0) : 0
    }
  }

  /// Every row of `sql`, its columns as text joined by `|` (NULL as `NULL`), as `psql -At`
  /// prints them: for checks that two schemas hold the same rows.
  func rows(_ sql: String) throws -> [String] {
    try query(sql) { result in
      (0..<libpq.PQntuples(result)).map { row in
        (0..<libpq.PQnfields(result)).map { column in
          libpq.PQgetisnull(result, row, column) == 0
            ? libpq.PQgetvalue(result, row, column).map { String(cString: $0) } ?? "" : "NULL"
        }.joined(separator: "|")
      }
    }
  }

  private func check(_ result: OpaquePointer?, _ sql: String) throws {
    let status = result.map(libpq.PQresultStatus) ?? PGRES_FATAL_ERROR
    guard status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK else { return }
    throw BenchError("PostgreSQL error (\(Self.message(handle, libpq))) in: \(sql)")
  }

  private static func message(_ handle: OpaquePointer, _ libpq: LibPQ) -> String {
    guard let text = libpq.PQerrorMessage(handle) else { return "no message" }
    return String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
      .joined(separator: "; ")
  }
}

extension LibPQ {
  /// The value at `row`, `column` of `result` read as an integer with `atoll` (0 for none).
  fileprivate func integer(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> Int64 {
    PQgetvalue(result, row, column).map { atoll($0) } ?? 0
  }
}

extension [String] {
  /// Calls `body` with a C array of the strings (and a NULL after them when `terminated`),
  /// valid during the call.
  fileprivate func withCStringArray<Result>(
    terminated: Bool = false, _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result
  ) -> Result {
    let copies = map { strdup($0) } + (terminated ? [nil] : [])
    defer { for copy in copies { free(copy) } }
    return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress) }
  }
}

/// The baseline write on PostgreSQL: the statements of the store's own write
/// (`PostgresWrite`), each with `PQexecPrepared`: `BEGIN`, the claim of `session_writer` (a
/// fresh write token each time, so the triggers record the origin, as for the store), the
/// reads the planner makes for a login or logout (for a name not in the roster: the account
/// of that name, every account, the roster's size), the change of `accounts` (after the
/// request to make it active, or the move of `active_account`, when the active account
/// changes), the claim's end, the entries recorded, `COMMIT`; a write that changes nothing
/// reads the state and rolls back. It decides as the planner does, without its Swift layers,
/// and decodes nothing.
final class RawPQWriter {
  /// The planner's read of every account, when no account has the name as given (the store
  /// then compares each name as Swift does: `PostgresWrite.accountsSQL`).
  static let accountsSQL =
    "SELECT \(RawPQReads.accountColumns) FROM ONLY accounts a ORDER BY a.id"
  /// The planner's read of the roster's size before an account joins
  /// (`PostgresWrite.accountCountSQL`).
  static let accountCountSQL = "SELECT count(*) FROM ONLY accounts"

  let connection: RawPQ
  private let username: String
  private let origin: String
  private var token: Int64 = 0

  init(_ connection: RawPQ, username: String = "alice", origin: String = "sessionbench") {
    self.connection = connection
    self.username = username
    self.origin = origin
  }

  /// An account row as the store's reads return it: id, username, whether signed in.
  private typealias Row = (id: Int64, name: String, isLoggedIn: Bool)

  private func account(_ sql: String, _ values: [String] = []) throws -> Row? {
    let libpq = connection.libpq
    return try connection.query(sql, values) { result in
      guard libpq.PQntuples(result) == 1 else { return nil }
      let name = libpq.PQgetvalue(result, 0, 1).map { String(cString: $0) } ?? ""
      let signedIn = libpq.PQgetvalue(result, 0, 2).map { $0.pointee == CChar(UInt8(ascii: "t")) } ?? false
      return (libpq.integer(result, 0, 0), name, signedIn)
    }
  }

  /// Signs ``username`` in (`true`), or the active account out, in a transaction of its
  /// own; returns the new head, or nil when nothing changed.
  @discardableResult
  func write(login signIn: Bool) throws -> Int64? {
    try write(signIn ? username : nil)
  }

  /// Signs `name` in (an account of the roster signs in and becomes active; a new one joins,
  /// signed in and active), or for nil the active account out, in a transaction of its
  /// own; returns the new head, or nil when nothing changed.
  @discardableResult
  func write(_ name: String?) throws -> Int64? {
    token += 1
    let libpq = connection.libpq
    try connection.exec("BEGIN")
    do {
      let head = try connection.query(PostgresWrite.claimSQL, [origin, String(token)]) {
        libpq.integer($0, 0, 0)
      }
      let statements = try plan(name, active: try account(PostgresWrite.activeAccountSQL))
      guard !statements.isEmpty else {
        // Nothing to change: the store reads the state it returns, then rolls back.
        try connection.query(RawPQReads.snapshotSQL) { RawPQReads.readRows($0, libpq) }
        try connection.exec("ROLLBACK")
        return nil
      }
      for statement in statements { try connection.query(statement.sql, statement.values) { _ in } }
      try connection.query(PostgresWrite.releaseSQL) { _ in }
      let recorded = try connection.query(PostgresWrite.recordedSQL, [String(head)]) { result in
        RawPQReads.readRows(result, libpq)
        return libpq.PQntuples(result)
      }
      guard recorded == 1 else { throw BenchError("the raw write recorded \(recorded) entries, not 1") }
      try connection.exec("COMMIT")
      return head + 1
    } catch {
      try? connection.exec("ROLLBACK")
      throw error
    }
  }

  /// The statements of the write, after the planner's reads: empty when it changes nothing.
  private func plan(_ name: String?, active: Row?) throws -> [(sql: String, values: [String])] {
    guard let name else {
      guard let active, active.isLoggedIn else { return [] }
      return [(PostgresWrite.updateSQL, [active.name, "false", String(active.id)])]
    }
    guard let named = try account(PostgresWrite.accountNamedSQL, [name]) else {
      // The store reads every account to find one whose name Swift takes for the same
      // (another normalization); the baseline's names are ASCII, so none is: it reads the
      // rows and compares nothing. Then the roster's size, against its limit.
      try connection.query(Self.accountsSQL) { RawPQReads.readRows($0, connection.libpq) }
      guard try connection.integer(Self.accountCountSQL) < SessionRoster.limit else {
        throw BenchError("the roster is full: \(name) cannot join")
      }
      return [(PostgresWrite.activatesSQL, []), (PostgresWrite.insertSQL, [name, "true"])]
    }
    if !named.isLoggedIn {
      return (active?.id == named.id ? [] : [(PostgresWrite.activatesSQL, [])])
        + [(PostgresWrite.updateSQL, [name, "true", String(named.id)])]
    }
    return active?.id == named.id ? [] : [(PostgresWrite.pointSQL, [String(named.id)])]
  }
}

/// The SQL the store reads with, as it runs it (`PostgresTables` in SessionStoragePostgres).
enum RawPQReads {
  /// A `timestamptz` column in the feed's text format.
  private static func time(_ column: String) -> String {
    "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
  }

  /// The columns of an account, as the store reads them.
  static let accountColumns = "a.id, a.username, a.is_logged_in, \(time("a.updated_at")), a.seq"

  /// The active account's state and the head, in one row (what `state` and `snapshot()` run).
  static let snapshotSQL =
    "SELECT a.username, coalesce(a.is_logged_in, false), \(time("coalesce(a.updated_at, p.updated_at)")), w.head "
    + "FROM ONLY session_writer w CROSS JOIN ONLY active_account p LEFT JOIN ONLY accounts a ON a.id = p.account_id "
    + "WHERE w.id = 1 AND p.id = 1"
  /// A page of the feed after `$1`, at most `$2` rows (what a subscription runs).
  static let pageSQL =
    "SELECT seq, \(time("at")), origin, old_username, new_username, old_is_logged_in, new_is_logged_in, "
    + "\(time("old_updated_at")), account_id, was_active, is_active FROM ONLY session_changes WHERE seq > $1 "
    + "ORDER BY seq LIMIT $2"

  /// Looks at every column of every row of `result` (`PQgetvalue`, no conversion: the
  /// floor) and calls `each` with each row's first column as an integer.
  static func readRows(_ result: OpaquePointer, _ libpq: LibPQ, _ each: (Int64) -> Void = { _ in }) {
    for row in 0..<libpq.PQntuples(result) {
      for column in 1..<libpq.PQnfields(result) where libpq.PQgetisnull(result, row, column) == 0 {
        _ = libpq.PQgetvalue(result, row, column)
      }
      each(libpq.integer(result, row, 0))
    }
  }
}
