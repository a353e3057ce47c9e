import SessionStorage
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Where a store lives: the server (a libpq URL without the `schema` parameter) and the
/// schema; what every error names (the URL with its password replaced by `***`).
struct PostgresPlace: Sendable {
  /// The URL as libpq reads it: the store's URL without `schema`.
  let conninfo: String
  /// The schema that holds the store's tables.
  let schema: String
  /// The store's URL with any password replaced by `***`.
  let described: String
  /// How long a connection attempt may take, in whole seconds (libpq's `connect_timeout`).
  let connectTimeoutSeconds: Int64
  /// How long a statement waits for a lock, in milliseconds (`lock_timeout`; 0: no limit).
  let lockTimeoutMilliseconds: Int64
  /// The origin of the store's writes: what `application_name` starts with.
  let origin: String

  /// The default schema when the URL names none.
  static let defaultSchema = "public"
  /// The schema names a store accepts: a lowercase letter or `_`, then up to 39 lowercase
  /// letters, digits or `_`.
  static let schemaRule = "a lowercase letter or '_', then up to 39 lowercase letters, digits or '_'"

  /// Parses `url`: `postgresql://` or `postgres://`, with an optional `schema` parameter.
  /// - Throws: `invalidArgument` naming the (redacted) URL and what is wrong.
  init(url: String, connectTimeout: Duration, lockTimeout: Duration, origin: String) throws {
    described = PostgresPasswords.redacted(url)
    guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
      throw SessionStorageError(
        .invalidArgument,
        "the URL '\(described)' is not a PostgreSQL URL: it must start with postgresql:// "
          + "(e.g. postgresql://user@host:5432/db?schema=front_desk)")
    }
    // The query begins at the first '?' after the user part, as libpq reads it, byte by
    // byte: a raw '?' in the password is the password's, and a combining mark after a '&' or
    // '=' does not hide it.
    let bytes = Array(url.utf8)
    var base = bytes[...]
    var parameters: [ArraySlice<UInt8>] = []
    if let query = PostgresPasswords.queryStart(in: bytes) {
      base = bytes[..<(query - 1)]
      parameters = bytes[query...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
    }
    var schema: String?
    var kept: [ArraySlice<UInt8>] = []
    for parameter in parameters {
      let name = parameter.prefix { $0 != UInt8(ascii: "=") }
      guard name.elementsEqual("schema".utf8) else {
        kept.append(parameter)
        continue
      }
      guard schema == nil else {
        throw SessionStorageError(.invalidArgument, "the URL '\(described)' names the schema twice")
      }
      let value = String(decoding: parameter.dropFirst(name.count + 1), as: UTF8.self)
      schema = value.percentDecoded ?? value
    }
    self.schema = try Self.validatedSchema(schema ?? Self.defaultSchema, in: described)
    conninfo = String(
      decoding: kept.isEmpty
        ? Array(base) : base + [UInt8(ascii: "?")] + kept.joined(separator: [UInt8(ascii: "&")]),
      as: UTF8.self)
    connectTimeoutSeconds = max(
      1, (connectTimeout.components.seconds) + (connectTimeout.components.attoseconds > 0 ? 1 : 0))
    lockTimeoutMilliseconds = lockTimeout <= .zero ? 0 : max(1, lockTimeout.milliseconds)
    self.origin = origin
  }

  /// The `application_name` the server shows for the store's connection of `role`, unless
  /// the URL sets one: `<origin>/<role>`, such as `front-desk/listener`, so that
  /// `pg_stat_activity` tells a store's writer, reader and `LISTEN` connections apart. The
  /// server keeps 63 bytes (and says so in a notice): the origin is cut, at a character, to
  /// leave room for the role.
  func applicationName(for role: PQConnection.Role) -> String {
    let suffix = "/" + role.rawValue
    var name = ""
    for character in origin {
      guard name.utf8.count + character.utf8.count + suffix.utf8.count <= 63 else { break }
      name.append(character)
    }
    return name + suffix
  }

  /// Throws `invalidArgument` unless `schema` follows ``schemaRule``.
  static func validatedSchema(_ schema: String, in url: String) throws -> String {
    let scalars = Array(schema.unicodeScalars)
    func isLower(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || scalar == "_" }
    guard let first = scalars.first, isLower(first), scalars.count <= 40,
      scalars.allSatisfy({ isLower($0) || ("0"..."9").contains($0) })
    else {
      throw SessionStorageError(
        .invalidArgument,
        "the schema '\(schema.escapedForTerminal)' of '\(url)' is not a valid schema name: it must be "
          + schemaRule)
    }
    return schema
  }

  /// `"schema"`: the schema as a quoted identifier.
  var quotedSchema: String { Self.quoted(schema) }

  /// The store's `LISTEN` channel, quoted: one per schema, as channels are database-wide.
  var quotedChannel: String { Self.quoted(channel) }

  /// `session_changes_<schema>`, the channel the `session_feed` trigger notifies.
  var channel: String { "session_changes_" + schema }

  /// `name` as a quoted identifier (`"` doubled).
  static func quoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  // MARK: Errors

  /// The error for a connection that could not be made (with the server's SQLSTATE when it
  /// sent one), or was lost (`lost`).
  ///
  /// Only what passes is `unavailable`: a server that cannot be reached, is starting up or
  /// shutting down, or has no connection slot left. A login the server turns away (no such
  /// database or role, `NOLOGIN`, a password refused, no `pg_hba.conf` entry) and SSL that
  /// cannot be set up are `refused`; a URL libpq cannot read is `invalidArgument`.
  func connectionError(_ reason: String, state: String? = nil, lost: Bool = false) -> SessionStorageError {
    // libpq's messages may quote the URL, or a piece of it.
    let reason = PostgresPasswords.scrubbed(reason, quoting: conninfo)
    let lower = reason.lowercased()
    if lost {
      return SessionStorageError(
        .unavailable, "the connection to the server was lost: " + reason, path: described)
    }
    let unreachable = SessionStorageError(
      .unavailable, "cannot connect to the server: " + reason, path: described)
    let refused = SessionStorageError(
      .refused, "the server refused the connection: " + reason, path: described)
    if state == Self.poolerRefusal {
      return SessionStorageError(
        .refused,
        "the server, or a connection pooler in front of it, refused the connection (SQLSTATE 08P01, which "
          + "PgBouncer gives every refusal of its own): " + reason, path: described)
    }
    if let state {
      // 08 connection exceptions, 53 insufficient resources (too many connections),
      // 57 operator intervention (starting up, shutting down), 58 system errors.
      return ["08", "53", "57", "58"].contains(String(state.prefix(2))) ? unreachable : refused
    }
    if Self.unreadableURL.contains(where: lower.contains)
      || (lower.contains("invalid ") && lower.contains(" value"))
    {
      return unreadableURL(reason)
    }
    return Self.unreachableServer.contains(where: lower.contains) ? unreachable : refused
  }

  /// The SQLSTATE of a login refused by a connection pooler: PgBouncer sends `08P01`
  /// (protocol violation) for each refusal of its own, a wrong password or an unknown user or
  /// database as well as a server it cannot reach for now, and PostgreSQL sends it at login
  /// only for a malformed startup. Which one it is stands only in the message text, which
  /// no logic here reads: such a refusal is `refused` (not worth retrying) when a store
  /// opens, and a running subscriber asks again for a while before it gives up (see
  /// ``PostgresLog``).
  static let poolerRefusal = "08P01"

  /// The error for a URL libpq cannot read (`reason`, libpq's message, has its secrets
  /// replaced here): nothing was sent to a server.
  func unreadableURL(_ reason: String) -> SessionStorageError {
    SessionStorageError(
      .invalidArgument,
      "libpq cannot read the URL: " + PostgresPasswords.scrubbed(reason, quoting: conninfo)
        + "; no server was contacted",
      path: described)
  }

  /// What libpq says (in English, our processes' locale) about a URL it cannot read.
  private static let unreadableURL = [
    "invalid uri", "invalid connection option", "missing \"=\"", "invalid percent-encoded",
    "unterminated quoted",
  ]

  /// What libpq and the server say about a server that cannot be reached for now.
  private static let unreachableServer = [
    "could not connect", "connection refused", "timeout expired", "timed out",
    "could not translate host name",
    "temporary failure in name resolution", "no such file or directory", "is the server running",
    "server closed the connection", "closed unexpectedly", "could not receive data", "could not send",
    "network is unreachable", "no route to host", "host is down", "connection reset", "ssl syscall error",
    "eof detected", "no connection to the server", "is starting up", "is shutting down", "in recovery mode",
    "not yet accepting connections", "too many clients", "too many connections",
    "connection slots are reserved",
    "out of memory",
  ]

  /// The error for a statement the server refused (SQLSTATE `state`), or whose connection
  /// was lost (`lost`).
  func serverError(_ text: String, state: String?, lost: Bool, sql: String) -> SessionStorageError {
    if lost || state?.hasPrefix("08") == true || state.map(["57P01", "57P02", "57P03"].contains) == true {
      var error = connectionError(text, lost: true)
      error.sql = sql
      return error
    }
    let code: SessionStorageError.Code =
      switch state {
      case "42501": .permissionDenied
      case "25006": .readOnly
      case "40001", "40P01", "55P03", "57014": .busy
      case "22003": .cursorsExhausted
      // session_feed fired for a table that is not its schema's session (a renamed schema).
      case "SS001": .tamperedSchema
      // The store's tables or schema are gone (dropped, or renamed) under an open store.
      case "42P01", "3F000": .notFound
      default: .postgres
      }
    if code == .notFound {
      return SessionStorageError(
        code,
        "schema \(schema) holds no session store any more (\(text)): it was dropped or renamed while the store "
          + "was open",
        path: described, sql: sql)
    }
    return SessionStorageError(
      code, "\(text) (SQLSTATE \(state ?? "unknown"), schema \(schema))", path: described, sql: sql)
  }
}
