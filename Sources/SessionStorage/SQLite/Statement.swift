import CSQLite

/// A prepared statement with typed bindings and columns.
final class Statement {
  let sql: String
  private unowned let connection: Connection
  /// A `let`: reading it needs no exclusivity check, and it is read for every column.
  private let handle: OpaquePointer
  /// The value bound to each parameter, by index − 1; nil where unknown.
  /// (Not checked for exclusive access at run time: see ``Connection/decoder``.)
  @exclusivity(unchecked) private var bound: [SQLiteValue?] = []

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
  /// SQLite keeps a binding across resets, so a value identical to the one bound there
  /// last is not bound again (binding a text copies it: ~700 instructions).
  func bind(_ value: SQLiteValue, at index: Int32) throws {
    let slot = Int(index) - 1
    if slot < bound.count, let last = bound[slot], last.isIdentical(to: value) { return }
    // Forgotten until the binding succeeds: a failed one leaves SQLite's value unknown.
    if slot < bound.count { bound[slot] = nil }
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(handle, index)
    case .integer(let number): rc = sqlite3_bind_int64(handle, index, number)
    case .text(let text):
      // withCString lends the string's own NUL-terminated bytes; passing `text` directly
      // would copy them into a temporary array first.
      rc = text.withCString { sqlite3_bind_text(handle, index, $0, -1, csqlite_transient()) }
    }
    guard rc == SQLITE_OK else { throw connection.failure(rc, sql: sql) }
    if slot >= bound.count { bound += repeatElement(nil, count: slot + 1 - bound.count) }
    bound[slot] = value
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

  /// Whether column `index` of the current row is NULL.
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

  /// Column `index` as the bytes of its text, or nil for NULL: SQLite's own buffer, valid
  /// until the next step or reset, for reading a value without making a `String` of it.
  func utf8(at index: Int32) -> UnsafeBufferPointer<UInt8>? {
    // What sqlite3_column_text and sqlite3_column_bytes do, with one column lookup instead
    // of two (each costs ~60 instructions, five text columns an entry). SQLite calls the
    // column's value "unprotected": only thread-unsafe, and a connection is used by one
    // thread at a time (opened with SQLITE_OPEN_NOMUTEX, under its owner's lock).
    let value = sqlite3_column_value(handle, index)
    // SQLite gives no pointer for NULL, and for an empty BLOB: only the type tells them apart.
    guard let base = sqlite3_value_text(value) else {
      return sqlite3_value_type(value) == SQLITE_NULL ? nil : UnsafeBufferPointer(start: nil, count: 0)
    }
    return UnsafeBufferPointer(start: base, count: Int(sqlite3_value_bytes(value)))
  }
}
