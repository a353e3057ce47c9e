import CSQLite

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A prepared statement with typed bindings and columns.
final class Statement {
  let sql: String
  private unowned let connection: Connection
  private let handle: OpaquePointer

  init(connection: Connection, sql: String) throws {
    self.connection = connection
    self.sql = sql
    var handle: OpaquePointer?
    let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
    guard rc == SQLITE_OK, let handle else { throw connection.failure(rc, sql: sql) }
    self.handle = handle
  }

  deinit { sqlite3_finalize(handle) }

  /// Ends any pending step so the statement can run again; bindings are replaced by ``bind(_:)``.
  func reset() { sqlite3_reset(handle) }

  /// Binds `values` to parameters 1…n.
  func bind(_ values: [SQLiteValue]) throws {
    for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
  }

  /// Binds `value` to parameter `index` (1-based; `?NNN` parameters use their number).
  func bind(_ value: SQLiteValue, at index: Int32) throws {
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(handle, index)
    case .integer(let number): rc = sqlite3_bind_int64(handle, index, number)
    case .text(let text):
      rc = text.withCString { sqlite3_bind_text(handle, index, $0, -1, csqlite_transient()) }
    }
    guard rc == SQLITE_OK else { throw connection.failure(rc, sql: sql) }
  }

  /// Advances to the next row: true when there is one, false when done.
  @discardableResult
  func step() throws -> Bool {
    switch sqlite3_step(handle) {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    case let rc:
      sqlite3_reset(handle)
      throw connection.failure(rc, sql: sql)
    }
  }

  func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

  func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

  /// Column `index` as text, or nil for NULL. Throws when the bytes are not valid UTF-8.
  func text(at index: Int32) throws -> String? {
    guard let bytes = utf8(at: index) else { return nil }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw SessionStorageError(
        .corrupt, "column \(index) holds text that is not valid UTF-8", path: connection.path, sql: sql)
    }
    return text
  }

  /// Column `index` as text with invalid UTF-8 replaced by U+FFFD, or nil for NULL: for
  /// values someone else may have written, which are read and reported, never trusted.
  func lossyText(at index: Int32) -> String? {
    utf8(at: index).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Column `index` as a time, as `Timestamp.stored(_:)` reads it.
  func time(at index: Int32) -> Date { Timestamp.stored(utf8(at: index)) }

  /// Column `index` as the bytes of its text, or nil for NULL: SQLite's own buffer, valid
  /// until the next step or reset.
  private func utf8(at index: Int32) -> UnsafeBufferPointer<UInt8>? {
    // SQLite gives no pointer for NULL, and for an empty BLOB: only the type tells them apart.
    guard let base = sqlite3_column_text(handle, index) else {
      return sqlite3_column_type(handle, index) == SQLITE_NULL
        ? nil : UnsafeBufferPointer(start: nil, count: 0)
    }
    return UnsafeBufferPointer(start: base, count: Int(sqlite3_column_bytes(handle, index)))
  }
}

/// SQL text. Each connection prepares a statement once and finds it again by its text; the
/// statements of every read and write are `static let`s.
typealias SQL = String

/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case text(String)
}
