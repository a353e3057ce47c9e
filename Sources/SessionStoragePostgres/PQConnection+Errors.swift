import CLibPQ
import SessionStorage
internal import SystemKit

/// What a connection's failures say: the server's error of a statement, libpq's message on
/// one line, and the connection limits that keep a store from opening.
extension PQConnection {
  /// Whether the last statement failed with a serialization failure or a deadlock: its
  /// transaction was rolled back, and running it again may succeed.
  var lastFailureIsRetryable: Bool { lastErrorState == "40001" || lastErrorState == "40P01" }

  /// Throws the error `result` reports, if any.
  func check(_ result: OpaquePointer?, _ sql: String) throws {
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
  static func message(_ handle: OpaquePointer?, _ libpq: LibPQ) -> String {
    guard let handle, let text = libpq.PQerrorMessage(handle) else { return "no message" }
    return oneLine(String(cString: text))
  }

  /// `text`'s lines (libpq indents hints with a tab) trimmed and joined with "; ".
  static func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
      .joined(separator: "; ")
  }

  /// `refused` when the role or the database allows fewer than `count` connections
  /// (`CONNECTION LIMIT`, which binds all but superusers): a store that needs that many can
  /// never open, so the second connection's "too many connections" (SQLSTATE 53300, also a
  /// full server's, which passes) is not worth retrying. Nil otherwise, or when the limits
  /// cannot be read.
  func connectionLimitRefusal(needing count: Int) -> SessionStorageError? {
    guard
      let row = try? query(
        "SELECT current_user, r.rolconnlimit, d.datconnlimit, r.rolsuper FROM pg_roles r, pg_database d "
          + "WHERE r.rolname = current_user AND d.datname = current_database()"
      ).rows.first, row.count == 4, row[3] == "f"
    else { return nil }
    let role = row[0] ?? "?"
    func tooFew(_ limit: String?) -> Int? {
      limit.flatMap { Int($0) }.flatMap { (0..<count).contains($0) ? $0 : nil }
    }
    let advice = "a writable store needs \(count) connections, and one more while anyone subscribes"
    if let limit = tooFew(row[1]) {
      return SessionStorageError(
        .refused,
        "the role \(role) may have at most \(limit) connection\(limit == 1 ? "" : "s") (CONNECTION LIMIT \(limit)): "
          + "\(advice) (ALTER ROLE \(PostgresPlace.quoted(role)) CONNECTION LIMIT \(count + 1))",
        path: place.described)
    }
    if let limit = tooFew(row[2]) {
      return SessionStorageError(
        .refused,
        "the database allows at most \(limit) connection\(limit == 1 ? "" : "s") (CONNECTION LIMIT \(limit)): "
          + advice, path: place.described)
    }
    return nil
  }
}
