import CLibPQ
import SessionStorage

/// Statements on a connection: transactions, SQL with and without values, pipelines, and
/// their rows.
extension PQConnection {
  /// Starts a transaction. A connection the server closed since its last use (a restart,
  /// `pg_terminate_backend`) is only found out now: it is connected again and the BEGIN
  /// sent once more, as nothing was sent in between.
  func begin() throws {
    do {
      try execute("BEGIN")
    } catch let error as SessionStorageError where error.code == .unavailable && isBroken {
      try reconnect()
      try execute("BEGIN")
    }
  }

  /// Runs SQL without values (one or more statements). Behind a pooler, outside a
  /// transaction, the store's settings go with it in the same round trip: after a `BEGIN` (a
  /// bare one is ``beginSQL``), else before the statements, which then run in one implicit
  /// transaction.
  func execute(_ sql: String) throws {
    var sent = sql
    if needsSettings {
      if sql == "BEGIN" {
        sent = ([beginSQL] + settingsSQL).joined(separator: "; ")
      } else if sql.hasPrefix("BEGIN ") {
        sent = ([sql] + settingsSQL).joined(separator: "; ")
      } else {
        sent = (settingsSQL + [sql]).joined(separator: "; ")
      }
    }
    let result = libpq.PQexec(handle, sent)
    defer { libpq.PQclear(result) }
    do {
      try check(result, sql)
    } catch {
      // A transaction this call began, whose settings failed, is not left open.
      if sent != sql, sql.hasPrefix("BEGIN"), libpq.PQtransactionStatus(handle) == PQTRANS_INERROR {
        libpq.PQclear(libpq.PQexec(handle, "ROLLBACK"))
      }
      throw error
    }
  }

  /// Runs one statement with bound text values (`$1`, `$2`, …) and returns its rows as
  /// text (nil for NULL) and the number of rows it changed: prepared on its first use on
  /// this connection and executed prepared from then on; behind a pooler unnamed, and
  /// outside a transaction after the store's settings, in the same round trip and implicit
  /// transaction.
  @discardableResult
  func query(_ sql: String, _ values: [String?] = []) throws -> PQRows {
    if needsSettings { return try pipelined([(sql, values)])[0] }
    let name = isBehindPooler ? nil : try preparedName(sql, parameters: values.count)
    let result = withOptionalCStrings(values) { pointers in
      if let name { return libpq.PQexecPrepared(handle, name, Int32(values.count), pointers, nil, nil, 0) }
      return libpq.PQexecParams(handle, sql, Int32(values.count), nil, pointers, nil, nil, 0)
    }
    defer { libpq.PQclear(result) }
    return try rows(of: result, sql)
  }

  /// The name `sql` is prepared under on this connection, preparing it the first time.
  /// (A prepared statement outlives a rolled-back transaction; PostgreSQL plans it again
  /// when the tables it reads change.)
  private func preparedName(_ sql: String, parameters: Int) throws -> String {
    if let name = prepared[sql] { return name }
    let name = "sessionstorage_\(prepared.count)"
    let result = libpq.PQprepare(handle, name, sql, Int32(parameters), nil)
    defer { libpq.PQclear(result) }
    try check(result, sql)
    prepared[sql] = name
    return name
  }

  /// Runs statements one after the other in one round trip (libpq's pipeline mode), each
  /// seeing what the ones before it did, and returns their rows. A statement that fails
  /// throws its error; the ones after it are not run. Behind a pooler, outside a
  /// transaction, the store's settings run first, and the statements in one implicit
  /// transaction with them.
  func pipelined(_ statements: [(sql: String, values: [String?])]) throws -> [PQRows] {
    let settings = needsSettings ? settingsSQL.map { (sql: $0, values: [String?]()) } : []
    let sent = settings + statements
    let names = try sent.map { isBehindPooler ? nil : try preparedName($0.sql, parameters: $0.values.count) }
    guard libpq.PQenterPipelineMode(handle) == 1 else {
      throw place.connectionError(Self.message(handle, libpq), lost: isBroken)
    }
    defer {
      // A pipeline cut short (the connection lost while sending) cannot be left: the
      // connection is dropped, and its next use connects again.
      if libpq.PQexitPipelineMode(handle) != 1 {
        libpq.PQfinish(handle)
        handle = nil
      }
    }
    for (name, statement) in zip(names, sent) {
      let count = Int32(statement.values.count)
      let queued = withOptionalCStrings(statement.values) { pointers in
        if let name { return libpq.PQsendQueryPrepared(handle, name, count, pointers, nil, nil, 0) }
        return libpq.PQsendQueryParams(handle, statement.sql, count, nil, pointers, nil, nil, 0)
      }
      guard queued == 1 else { throw place.connectionError(Self.message(handle, libpq), lost: true) }
    }
    guard libpq.PQpipelineSync(handle) == 1 else {
      throw place.connectionError(Self.message(handle, libpq), lost: true)
    }
    var results: [PQRows] = []
    var failure: (any Error)?
    for statement in sent {
      // Each statement's result is followed by a null one.
      let result = libpq.PQgetResult(handle)
      while let extra = result.flatMap({ _ in libpq.PQgetResult(handle) }) { libpq.PQclear(extra) }
      defer { libpq.PQclear(result) }
      guard failure == nil else { continue }
      do {
        results.append(try rows(of: result, statement.sql))
      } catch {
        failure = error
      }
    }
    // Then the pipeline's end (unless the connection was lost).
    while let result = libpq.PQgetResult(handle) {
      let status = libpq.PQresultStatus(result)
      libpq.PQclear(result)
      if status == PGRES_PIPELINE_SYNC { break }
    }
    if let failure { throw failure }
    return Array(results.dropFirst(settings.count))
  }

  /// The rows of `result` (of `sql`) as text, or the error it reports.
  private func rows(of result: OpaquePointer?, _ sql: String) throws -> PQRows {
    try check(result, sql)
    var rows: [[String?]] = []
    let count = libpq.PQntuples(result)
    let columns = libpq.PQnfields(result)
    rows.reserveCapacity(Int(count))
    for row in 0..<count {
      var values: [String?] = []
      values.reserveCapacity(Int(columns))
      for column in 0..<columns {
        values.append(
          libpq.PQgetisnull(result, row, column) == 1
            ? nil : libpq.PQgetvalue(result, row, column).map { String(cString: $0) })
      }
      rows.append(values)
    }
    let changed = libpq.PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    return PQRows(rows: rows, changed: changed)
  }

  /// The first column of the first row, or nil.
  func scalar(_ sql: String, _ values: [String?] = []) throws -> String? {
    try query(sql, values).rows.first?.first ?? nil
  }
}

/// The rows of a query, as text, and how many rows the statement changed.
struct PQRows {
  var rows: [[String?]]
  var changed: Int
}
