import CLibPQ
import SessionStorage
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One libpq connection to the store's server, with `search_path` set to the store's
/// schema. libpq connections are not thread-safe: each is used under a lock of its owner.
///
/// Every statement with values is prepared once per connection and run with
/// `PQexecPrepared` (bound parameters, text format); `PQexec` runs only the library's own
/// SQL without values (transactions, migrations).
final class PQConnection {
  /// What a store uses a connection for; the server shows it in `application_name`.
  enum Role: String {
    /// Writes, migrations and compaction.
    case writer
    /// The feed's reads (the only connection of a read-only store).
    case reader
    /// The `LISTEN` connection that wakes subscribers.
    case listener
  }

  /// Where the store lives: what errors name and how to connect.
  let place: PostgresPlace
  /// What the connection is for.
  let role: Role
  /// Whether every transaction of this connection is read-only (the reader's).
  private let readOnly: Bool
  /// libpq's functions.
  let libpq: LibPQ
  private var handle: OpaquePointer?
  /// The statements prepared on this connection, by their SQL: the library runs a few
  /// fixed statements, so each is parsed and planned once per connection, not per call.
  private var prepared: [String: String] = [:]

  /// Connects and selects the store's schema; a `readOnly` connection cannot write.
  /// - Throws: `unavailable` when the server cannot be reached (or is starting, shutting
  ///   down, out of connection slots), `refused` when it turns the login away,
  ///   `invalidArgument` for a URL libpq cannot read, `libraryMissing` when libpq cannot be
  ///   loaded.
  init(_ place: PostgresPlace, role: Role, readOnly: Bool = false) throws {
    self.place = place
    self.role = role
    self.readOnly = readOnly
    do {
      libpq = try LibPQ.load()
    } catch {
      var error = error
      error.path = place.described
      throw error
    }
    handle = try Self.connect(place, role: role, libpq: libpq, refusal: &lastLoginRefusal)
    do {
      try selectSchema()
    } catch {
      libpq.PQfinish(handle)
      handle = nil
      throw error
    }
  }

  deinit { libpq.PQfinish(handle) }

  /// Connects; `refusal` is set to the SQLSTATE of the login refusal the server (or a pooler
  /// in front of it) sent, nil when there was none.
  private static func connect(
    _ place: PostgresPlace, role: Role, libpq: LibPQ, refusal: inout String?
  ) throws -> OpaquePointer? {
    refusal = nil
    try requireReadable(place, libpq: libpq)
    // The URL is expanded as `dbname`; the settings before it are defaults it can override.
    let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
    let values = [
      String(max(1, place.connectTimeoutSeconds)), place.applicationName(for: role), place.conninfo,
    ]
    let handle = withCStrings(keywords) { keywords in
      withCStrings(values) { values in libpq.PQconnectdbParams(keywords, values, 1) }
    }
    guard var handle else {
      throw SessionStorageError(.unavailable, "cannot connect: libpq is out of memory", path: place.described)
    }
    if libpq.PQstatus(handle) != CONNECTION_OK {
      let reason = Self.message(handle, libpq)
      libpq.PQfinish(handle)
      // A refusal the server sent ("FATAL:  …") has a SQLSTATE, which libpq shows only in its
      // verbose mode: ask once more in that mode to learn whether waiting can cure it (and
      // keep that connection if the server takes it now).
      guard reason.contains(":  "),
        let again = withCStrings(
          keywords,
          { keywords in
            withCStrings(values) { values in libpq.PQconnectStartParams(keywords, values, 1) }
          })
      else { throw place.connectionError(reason) }
      _ = libpq.PQsetErrorVerbosity(again, PQERRORS_VERBOSE)
      libpq.PQreset(again)
      guard libpq.PQstatus(again) == CONNECTION_OK else {
        let verbose = Self.message(again, libpq)
        libpq.PQfinish(again)
        refusal = Self.sqlState(in: verbose)
        throw place.connectionError(reason, state: refusal)
      }
      _ = libpq.PQsetErrorVerbosity(again, PQERRORS_DEFAULT)
      handle = again
    }
    // Notices (such as "relation already exists, skipping") are not errors: libpq would
    // print them on the process's stderr.
    _ = libpq.PQsetNoticeProcessor(handle, { _, _ in }, nil)
    return handle
  }

  /// Throws `invalidArgument` when libpq cannot parse the URL (`PQconninfoParse`, the
  /// parser a connection uses): it is told by the parser's answer, not by its message, and
  /// before any server is contacted. libpq's message may quote the URL or a piece of its
  /// password: only its scrubbed form is shown.
  private static func requireReadable(_ place: PostgresPlace, libpq: LibPQ) throws {
    var message: UnsafeMutablePointer<CChar>?
    let options = libpq.PQconninfoParse(place.conninfo, &message)
    defer { libpq.PQfreemem(message) }
    guard options == nil else {
      libpq.PQconninfoFree(options)
      return
    }
    let reason = message.map { Self.oneLine(String(cString: $0)) } ?? "libpq is out of memory"
    throw place.unreadableURL(reason)
  }

  /// The SQLSTATE in a message libpq wrote in verbose mode (`SEVERITY:  STATE: message`).
  private static func sqlState(in message: String) -> String? {
    var rest = message[...]
    while let separator = rest.rangeAsFoundationFinds(":  ") {
      let after = rest[separator.upperBound...]
      let code = after.prefix(5)
      if code.count == 5, code.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isUppercase) }),
        after.dropFirst(5).hasPrefix(": ")
      {
        return String(code)
      }
      rest = after
    }
    return nil
  }

  /// Selects the store's schema (quoted) with `pg_temp` last, so that no temporary table
  /// of this session stands in for the store's (the migrations' functions keep this path),
  /// keeps times in UTC and bounds lock waits, and pins what the store's promises rest on,
  /// whatever the server, database or role set as defaults:
  /// - `synchronous_commit` is at least `on` locally: a default of `off` would acknowledge
  ///   commits that an immediate shutdown or a crash then loses (a stronger default such as
  ///   `remote_apply`, or `local`, is kept);
  /// - `default_transaction_isolation` is `read committed`, under which a writer waiting for
  ///   the session row goes on with the newest head instead of failing to serialize;
  /// - `statement_timeout` is 0: a timeout would cancel a COMMIT's wait for a synchronous
  ///   standby, and PostgreSQL then reports the commit done without the standby;
  /// - `client_encoding` is UTF-8, what the store reads and binds;
  /// - `session_replication_role` is `origin`, so that the feed's triggers fire (only a
  ///   superuser may change it; a role whose default is another is refused here).
  private func selectSchema() throws {
    try execute(
      "SET search_path TO \(place.quotedSchema), pg_temp; SET TIME ZONE 'UTC'; "
        + "SET lock_timeout = \(place.lockTimeoutMilliseconds); SET statement_timeout = 0; "
        + "SET default_transaction_isolation = 'read committed'; SET client_encoding = 'UTF8'; "
        + (readOnly ? "SET default_transaction_read_only = on; " : "")
        + "SELECT set_config('synchronous_commit', 'on', false) "
        + "WHERE current_setting('synchronous_commit') = 'off'; "
        + "SELECT set_config('session_replication_role', 'origin', false) "
        + "WHERE current_setting('session_replication_role') <> 'origin'")
  }

  /// The SQLSTATE of the last connection attempt's refusal (nil when it connected, or
  /// failed without one): `08P01` is a pooler's (see ``PostgresPlace/poolerRefusal``).
  private(set) var lastLoginRefusal: String?

  /// The process id of the connection's server process (0 when not connected).
  var backendPID: Int32 { libpq.PQbackendPID(handle) }

  /// The SQLSTATE of the last statement that failed, nil when the last one succeeded.
  private(set) var lastErrorState: String?

  /// Whether the last statement failed with a serialization failure or a deadlock: its
  /// transaction was rolled back, and running it again may succeed.
  var lastFailureIsRetryable: Bool { lastErrorState == "40001" || lastErrorState == "40P01" }

  /// Whether the connection is lost (the server closed it, or the network failed).
  var isBroken: Bool { handle == nil || libpq.PQstatus(handle) != CONNECTION_OK }

  /// Connects again (after a lost connection) and selects the schema again.
  func reconnect() throws {
    libpq.PQfinish(handle)
    handle = nil
    prepared = [:]  // prepared statements end with their server session
    handle = try Self.connect(place, role: role, libpq: libpq, refusal: &lastLoginRefusal)
    try selectSchema()
  }

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

  /// Runs SQL without values (one or more statements).
  func execute(_ sql: String) throws {
    let result = libpq.PQexec(handle, sql)
    defer { libpq.PQclear(result) }
    try check(result, sql)
  }

  /// Runs one statement with bound text values (`$1`, `$2`, …) and returns its rows as
  /// text (nil for NULL) and the number of rows it changed. The statement is prepared on
  /// its first use on this connection (`PQprepare`) and executed prepared from then on.
  @discardableResult
  func query(_ sql: String, _ values: [String?] = []) throws -> PQRows {
    let name = try preparedName(sql, parameters: values.count)
    let result = withOptionalCStrings(values) { pointers in
      libpq.PQexecPrepared(handle, name, Int32(values.count), pointers, nil, nil, 0)
    }
    defer { libpq.PQclear(result) }
    return try rows(of: result, sql)
  }

  /// Runs prepared statements one after the other in one round trip (libpq's pipeline
  /// mode), each seeing what the ones before it did, and returns their rows. A statement
  /// that fails throws its error; the ones after it are not run.
  func pipelined(_ statements: [(sql: String, values: [String?])]) throws -> [PQRows] {
    let names = try statements.map { try preparedName($0.sql, parameters: $0.values.count) }
    guard libpq.PQenterPipelineMode(handle) == 1 else {
      throw place.connectionError(Self.message(handle, libpq), lost: isBroken)
    }
    defer { _ = libpq.PQexitPipelineMode(handle) }
    for (name, statement) in zip(names, statements) {
      let sent = withOptionalCStrings(statement.values) { pointers in
        libpq.PQsendQueryPrepared(handle, name, Int32(statement.values.count), pointers, nil, nil, 0)
      }
      guard sent == 1 else { throw place.connectionError(Self.message(handle, libpq), lost: true) }
    }
    guard libpq.PQpipelineSync(handle) == 1 else {
      throw place.connectionError(Self.message(handle, libpq), lost: true)
    }
    var results: [PQRows] = []
    var failure: (any Error)?
    for statement in statements {
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
    return results
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

  /// The first column of the first row, or nil.
  func scalar(_ sql: String, _ values: [String?] = []) throws -> String? {
    try query(sql, values).rows.first?.first ?? nil
  }

  /// Throws the error `result` reports, if any.
  private func check(_ result: OpaquePointer?, _ sql: String) throws {
    let status = result.map(libpq.PQresultStatus) ?? PGRES_FATAL_ERROR
    guard status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK else {
      lastErrorState = nil
      return
    }
    let state = result.flatMap { libpq.PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map {
      String(cString: $0)
    }
    lastErrorState = state
    let text =
      result.flatMap { libpq.PQresultErrorField($0, Int32(UInt8(ascii: "M"))) }.map { String(cString: $0) }
      ?? Self.message(handle, libpq)
    throw place.serverError(text, state: state, lost: isBroken, sql: sql)
  }

  /// libpq's last message for `handle` on one line: its lines (libpq indents hints with a
  /// tab) trimmed and joined with "; ".
  private static func message(_ handle: OpaquePointer?, _ libpq: LibPQ) -> String {
    guard let handle, let text = libpq.PQerrorMessage(handle) else { return "no message" }
    return oneLine(String(cString: text))
  }

  /// `text`'s lines (libpq indents hints with a tab) trimmed and joined with "; ".
  private static func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
      .joined(separator: "; ")
  }

  // MARK: Notifications

  /// The connection's socket, for `poll`.
  var socket: Int32 { libpq.PQsocket(handle) }

  /// Runs `LISTEN` on the store's channel.
  func listen() throws { try execute("LISTEN \(place.quotedChannel)") }

  /// Reads what the server sent and returns how many notifications arrived; throws
  /// `unavailable` when the connection is lost.
  func takeNotifications() throws -> Int {
    guard libpq.PQconsumeInput(handle) == 1 else {
      throw place.connectionError(Self.message(handle, libpq), lost: true)
    }
    var count = 0
    while let notification = libpq.PQnotifies(handle) {
      libpq.PQfreemem(notification)
      count += 1
    }
    if isBroken { throw place.connectionError(Self.message(handle, libpq), lost: true) }
    return count
  }
}

/// The rows of a query, as text, and how many rows the statement changed.
struct PQRows {
  var rows: [[String?]]
  var changed: Int
}

/// Calls `body` with a NULL-terminated C array of `strings`, valid during the call.
private func withCStrings<Result>(
  _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result
) -> Result {
  withOptionalCStrings(strings + [nil], body)
}

/// Calls `body` with a C array of `strings` (NULL for nil), or a null pointer for none.
private func withOptionalCStrings<Result>(
  _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result
) -> Result {
  let copies = strings.map { $0.map { strdup($0) } ?? nil }
  defer { for copy in copies { free(copy) } }
  let pointers = copies.map { UnsafePointer($0) }
  return pointers.withUnsafeBufferPointer { buffer in body(buffer.baseAddress) }
}
