import CSQLite
import Foundation
import SystemKit
import ToolingKit

/// A bare SQLite connection for the baselines: `sqlite3_*` calls from Swift and nothing
/// on top. Statements are prepared once and finalized when the connection closes. Not
/// thread-safe: each thread opens its own.
final class RawDB {
  let handle: OpaquePointer
  private var statements: [OpaquePointer] = []

  /// Opens `path` with the store's flags and pragmas: WAL, a 5 s busy timeout, foreign
  /// keys on, and `synchronous` when given.
  init(path: String, synchronous: String? = nil, readOnly: Bool = false) throws {
    var db: OpaquePointer?
    let flags =
      SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE)
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      if let db { sqlite3_close_v2(db) }
      throw BenchError("cannot open \(path): \(String(cString: sqlite3_errstr(rc)))")
    }
    handle = db
    sqlite3_busy_timeout(db, 5000)
    try exec("PRAGMA foreign_keys = ON")
    if !readOnly { try exec("PRAGMA journal_mode = WAL") }
    if let synchronous { try exec("PRAGMA synchronous = \(synchronous)") }
  }

  deinit {
    for statement in statements { sqlite3_finalize(statement) }
    sqlite3_close_v2(handle)
  }

  /// Runs SQL that returns no rows.
  func exec(_ sql: String) throws {
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw failure(rc, sql) }
  }

  /// A prepared statement, finalized with the connection.
  func prepare(_ sql: String) throws -> OpaquePointer {
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw failure(rc, sql) }
    statements.append(statement)
    return statement
  }

  /// Steps a statement to its end and resets it.
  func run(_ statement: OpaquePointer) throws {
    let rc = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard rc == SQLITE_DONE || rc == SQLITE_ROW else {
      throw failure(rc, String(cString: sqlite3_sql(statement)))
    }
  }

  /// The first column of the first row of `sql` as an integer (0 for NULL or no row).
  func integer(_ sql: String) throws -> Int64 {
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw failure(rc, sql) }
    defer { sqlite3_finalize(statement) }
    let step = sqlite3_step(statement)
    guard step == SQLITE_ROW || step == SQLITE_DONE else { throw failure(step, sql) }
    return step == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : 0
  }

  /// The baseline's page query: the change rows after `?1`, oldest first.
  func prepareChanges(limit: Int? = nil) throws -> OpaquePointer {
    try prepare(
      "SELECT seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at "
        + "FROM session_changes WHERE seq > ?1 ORDER BY seq" + (limit.map { " LIMIT \($0)" } ?? ""))
  }

  /// Runs a statement from ``prepareChanges(limit:)`` after `cursor`, reading every column
  /// as the store does, and calls `each` with every row's cursor. Returns the number of rows.
  @discardableResult
  static func readChanges(_ select: OpaquePointer, after cursor: Int64, _ each: (Int64) -> Void = { _ in })
    -> Int
  {
    sqlite3_bind_int64(select, 1, cursor)
    var rows = 0
    while sqlite3_step(select) == SQLITE_ROW {
      for column in 1...4 { _ = sqlite3_column_text(select, Int32(column)) }
      _ = sqlite3_column_int64(select, 5) + sqlite3_column_int64(select, 6)
      _ = sqlite3_column_text(select, 7)
      rows += 1
      each(sqlite3_column_int64(select, 0))
    }
    sqlite3_reset(select)
    return rows
  }

  func head() throws -> Int64 { try integer("SELECT coalesce(max(seq), 0) FROM session_changes") }

  private func failure(_ rc: Int32, _ sql: String) -> BenchError {
    BenchError("SQLite error \(rc) (\(String(cString: sqlite3_errmsg(handle)))) in: \(sql)")
  }
}

/// The baseline write: `BEGIN IMMEDIATE`, the store's own UPDATE, `COMMIT`, with
/// statements prepared once and bindings set once.
final class RawWriter {
  /// The UPDATE of `SessionStore.login(username:)`, as the store runs it (origin bound last).
  static let loginSQL =
    "UPDATE session SET username = ?1, is_logged_in = 1, updated_by = ?2, write_token = write_token + 1 "
    + "WHERE id = 1 AND (username IS NOT ?1 OR is_logged_in IS NOT 1)"
  /// The UPDATE of `SessionStore.logOut()`, as the store runs it.
  static let logoutSQL =
    "UPDATE session SET is_logged_in = 0, updated_by = ?1, write_token = write_token + 1 "
    + "WHERE id = 1 AND is_logged_in IS NOT 0"
  /// What a `sqlite3` shell user types: no origin, no token, so the trigger records `external`.
  static let externalLoginSQL = "UPDATE session SET username = ?1, is_logged_in = 1 WHERE id = 1"
  static let externalLogoutSQL = "UPDATE session SET is_logged_in = 0 WHERE id = 1"

  let db: RawDB
  private let begin: OpaquePointer
  private let commit: OpaquePointer
  private let login: OpaquePointer
  private let logout: OpaquePointer
  private let external: Bool

  /// Prepares the writes on `db`; `external` writes like the sqlite3 shell does, one
  /// autocommit UPDATE without the store's origin token.
  init(db: RawDB, username: String = "alice", origin: String = "sessionbench", external: Bool = false) throws
  {
    self.db = db
    self.external = external
    begin = try db.prepare("BEGIN IMMEDIATE")
    commit = try db.prepare("COMMIT")
    login = try db.prepare(external ? Self.externalLoginSQL : Self.loginSQL)
    logout = try db.prepare(external ? Self.externalLogoutSQL : Self.logoutSQL)
    sqlite3_bind_text(login, 1, username, -1, csqlite_transient())
    if !external {
      sqlite3_bind_text(login, 2, origin, -1, csqlite_transient())
      sqlite3_bind_text(logout, 1, origin, -1, csqlite_transient())
    }
  }

  /// Signs in (`true`) or out in a transaction of its own; returns whether a row changed.
  @discardableResult
  func write(login signIn: Bool) throws -> Bool {
    let update = signIn ? login : logout
    if external {
      try db.run(update)
    } else {
      try db.run(begin)
      try db.run(update)
      try db.run(commit)
    }
    return sqlite3_changes(db.handle) > 0
  }

  /// Only the UPDATE, inside a transaction the caller opened; returns whether a row changed.
  func update(login signIn: Bool) throws -> Bool {
    try db.run(signIn ? login : logout)
    return sqlite3_changes(db.handle) > 0
  }
}

/// `sessionbench child-raw-watcher --db PATH`: the baseline for cross-process delivery,
/// written the way one would in C. `inotify` on the database's directory; after every
/// event on the database or its `-wal`, a `PRAGMA data_version` re-check on a connection
/// of its own; when the commit is not visible yet, re-checks after 1, 2, 5, 10, 20 and
/// 50 ms unless another event comes first; a 1 s re-check as the safety net. A change
/// is read with a prepared SELECT of the new rows. Same output as ``ChildSubscriber``.
enum RawWatcher {
  /// Re-check delays after an event whose commit was not visible yet, in milliseconds.
  static let backoff: [Int32] = [1, 2, 5, 10, 20, 50]

  static func run(path: String) throws -> Never {
    let db = try RawDB(path: path)
    let dataVersion = try db.prepare("PRAGMA data_version")
    let select = try db.prepareChanges()
    var last = try db.head()
    var version = Self.version(dataVersion)

    let url = URL(fileURLWithPath: path)
    let names: Set<String> = [
      url.lastPathComponent, url.lastPathComponent + "-wal", url.lastPathComponent + "-journal",
    ]
    let events: Int32
    do {
      events = try Inotify.watch(url.deletingLastPathComponent().path)
    } catch {
      throw BenchError("inotify: \(error)")
    }
    ChildChannel.serve(readyAfter: last)

    var miss: Int?
    while true {
      var descriptor = pollfd(fd: events, events: Int16(POLLIN), revents: 0)
      let ready = poll(&descriptor, 1, miss.map { backoff[$0] } ?? 1000)
      var event = false
      if ready > 0 {
        event = Inotify.drain(events, names: names)
        if !event { continue }
      }
      let current = Self.version(dataVersion)
      if current != version {
        version = current
        RawDB.readChanges(select, after: last) { cursor in
          last = cursor
          ChildChannel.say("\(cursor) \(Monotonic.now())")
        }
        miss = nil
      } else if event {
        miss = 0
      } else if let current = miss {
        miss = current + 1 < backoff.count ? current + 1 : nil
      }
    }
  }

  private static func version(_ statement: OpaquePointer) -> Int64 {
    defer { sqlite3_reset(statement) }
    return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1
  }
}
