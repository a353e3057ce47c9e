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

/// One libpq connection to the store's server. libpq connections are not thread-safe: each
/// is used under a lock of its owner.
///
/// Connected to the server itself, it sets the store's settings once for its session
/// (``sessionSettingsSQL``) and prepares each statement with values once (`PQprepare`, then
/// `PQexecPrepared`: bound parameters, text format).
///
/// Behind a connection pooler (``isBehindPooler``) it keeps no state in its server session,
/// so that it works through a transaction pooler (PgBouncer's `pool_mode = transaction`),
/// which hands each transaction whichever server connection is free and leaves a session's
/// settings and prepared statements to the next client: every transaction begins with the
/// store's settings as `SET LOCAL` (``settingsSQL``), a statement outside a transaction runs
/// in one implicit transaction with them (in one round trip), and statements are unnamed
/// (`PQexecParams`). `PQexec` runs only the library's own SQL without values (transactions,
/// migrations).
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
  var handle: OpaquePointer?
  /// The statements prepared on this connection, by their SQL (not behind a pooler): the
  /// library runs a few fixed statements, so each is parsed and planned once per
  /// connection, not per call.
  var prepared: [String: String] = [:]
  /// Whether a pooler (PgBouncer, Pgpool-II) stands between this connection and the server:
  /// the process id the server announced at login (`PQbackendPID`) is then the pooler's
  /// own, not that of the server process that answers. Through such a pooler `LISTEN` may
  /// register on a server connection that then serves other clients.
  private(set) var isBehindPooler = false

  /// Connects; a `readOnly` connection's transactions cannot write.
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
    try connectAndEstablish()
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
    // `client_encoding` comes after the URL, which cannot change it: the store reads and
    // binds UTF-8. It is a startup parameter, which a pooler keeps per client.
    let keywords =
      ["connect_timeout", "fallback_application_name"] + Self.silenceLimits.map(\.keyword)
      + ["dbname", "client_encoding"]
    let values =
      [String(max(1, place.connectTimeoutSeconds)), place.applicationName(for: role)]
      + Self.silenceLimits.map(\.value) + [place.conninfo, "UTF8"]
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

  /// How long a TCP connection may go silent before libpq gives up on it, unless the URL
  /// says otherwise: a peer that stops answering while a statement waits for its result is
  /// probed after 10 s of silence, every 5 s, and dropped after 3 probes unanswered (25 s);
  /// data the peer does not acknowledge for 30 s drops it too (`tcp_user_timeout`). The
  /// operating system's defaults wait more than two hours. A server that is only slow (a
  /// lock, a synchronous standby) answers the probes and is waited for.
  static let silenceLimits: [(keyword: String, value: String)] = [
    ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
    ("tcp_user_timeout", "30000"),
  ]

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

  /// The store's settings for one transaction (`SET LOCAL`, `set_config(…, true)`),
  /// whatever the server, database or role set as defaults; they end with the transaction,
  /// so none reaches another client of a pooled server connection:
  /// - `search_path` is the store's schema (quoted) with `pg_temp` last, so that no temporary
  ///   table of the session stands in for the store's (the migrations' functions keep this
  ///   path);
  /// - times are in UTC, and `lock_timeout` bounds lock waits;
  /// - `synchronous_commit` is at least `on` locally: a default of `off` would acknowledge
  ///   commits that an immediate shutdown or a crash then loses (a stronger default such as
  ///   `remote_apply`, or `local`, is kept);
  /// - `statement_timeout` is 0: a timeout would cancel a COMMIT's wait for a synchronous
  ///   standby, and PostgreSQL then reports the commit done without the standby;
  /// - `session_replication_role` is `origin`, so that the feed's triggers fire (only a
  ///   superuser may change it; a role whose default is another is refused here).
  ///
  /// Transactions begin `READ COMMITTED` (``begin()``), under which a writer waiting for the
  /// session row goes on with the newest head instead of failing to serialize; a read-only
  /// connection's also `READ ONLY`. The client encoding is UTF-8 from the connection's start.
  ///
  /// `search_path` is set by `SET LOCAL`, whose parser writes the path as a session's `SET`
  /// does (the migrations' `SET search_path FROM CURRENT` keeps it in their functions).
  var settingsSQL: [String] { settings(local: true) }

  /// The store's settings, for the current transaction (`local`) or for the session.
  private func settings(local: Bool) -> [String] {
    [
      "SET \(local ? "LOCAL " : "")search_path TO \(place.quotedSchema), pg_temp",
      "SELECT set_config('TimeZone', 'UTC', \(local)), "
        + "set_config('lock_timeout', '\(place.lockTimeoutMilliseconds)', \(local)), "
        + "set_config('statement_timeout', '0', \(local)), "
        + "(SELECT set_config('synchronous_commit', 'on', \(local)) WHERE current_setting('synchronous_commit') = 'off'), "
        + "(SELECT set_config('session_replication_role', 'origin', \(local)) "
        + "WHERE current_setting('session_replication_role') <> 'origin')",
    ]
  }

  /// The store's settings for the whole session of a connection to the server itself: those
  /// of ``settingsSQL``, and `READ COMMITTED` (and `READ ONLY` for a read-only connection) as
  /// the session's default.
  private var sessionSettingsSQL: String {
    (settings(local: false) + ["SET default_transaction_isolation = 'read committed'"]
      + (readOnly ? ["SET default_transaction_read_only = on"] : [])).joined(separator: "; ")
  }

  /// Finds out whether a pooler stands in between, and sets the session's settings when
  /// none does.
  private func establish() throws {
    let sql = "SELECT pg_backend_pid()"
    let result = libpq.PQexec(handle, sql)
    defer { libpq.PQclear(result) }
    try check(result, sql)
    let pid = libpq.PQgetvalue(result, 0, 0).map { String(cString: $0) }
    isBehindPooler = pid != String(backendPID)
    if !isBehindPooler { try execute(sessionSettingsSQL) }
  }

  /// What a bare `BEGIN` of this connection sends behind a pooler.
  var beginSQL: String { "BEGIN ISOLATION LEVEL READ COMMITTED" + (readOnly ? " READ ONLY" : "") }

  /// Whether a statement needs the settings of ``settingsSQL`` before it: behind a pooler,
  /// outside a transaction (the next statement starts one).
  var needsSettings: Bool { isBehindPooler && libpq.PQtransactionStatus(handle) == PQTRANS_IDLE }

  /// The SQLSTATE of the last connection attempt's refusal (nil when it connected, or
  /// failed without one): `08P01` is a pooler's (see ``PostgresPlace/poolerRefusal``).
  private(set) var lastLoginRefusal: String?

  /// The process id of the connection's server process (0 when not connected).
  var backendPID: Int32 { libpq.PQbackendPID(handle) }

  /// The SQLSTATE of the last statement that failed, nil when the last one succeeded.
  var lastErrorState: String?

  /// Whether the connection is lost (the server closed it, or the network failed).
  var isBroken: Bool { handle == nil || libpq.PQstatus(handle) != CONNECTION_OK }

  /// Connects again (after a lost connection).
  func reconnect() throws {
    libpq.PQfinish(handle)
    handle = nil
    prepared = [:]  // prepared statements end with their server session
    try connectAndEstablish()
  }

  /// Connects and gives the connection the store's settings. A connection that cannot have
  /// them is closed, never used: the next use connects again.
  private func connectAndEstablish() throws {
    handle = try Self.connect(place, role: role, libpq: libpq, refusal: &lastLoginRefusal)
    do {
      try establish()
    } catch {
      libpq.PQfinish(handle)
      handle = nil
      throw error
    }
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

/// Calls `body` with a NULL-terminated C array of `strings`, valid during the call.
private func withCStrings<Result>(
  _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result
) -> Result {
  withOptionalCStrings(strings + [nil], body)
}

/// Calls `body` with a C array of `strings` (NULL for nil), or a null pointer for none.
func withOptionalCStrings<Result>(
  _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Result
) -> Result {
  let copies = strings.map { $0.map { strdup($0) } ?? nil }
  defer { for copy in copies { free(copy) } }
  let pointers = copies.map { UnsafePointer($0) }
  return pointers.withUnsafeBufferPointer { buffer in body(buffer.baseAddress) }
}
