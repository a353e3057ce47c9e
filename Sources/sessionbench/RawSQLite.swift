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

  /// Every row of `sql`, its columns as text joined by `|` (NULL as `NULL`), as the `sqlite3`
  /// shell prints them: for checks that two files hold the same rows.
  func rows(_ sql: String) throws -> [String] {
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw failure(rc, sql) }
    defer { sqlite3_finalize(statement) }
    var rows: [String] = []
    while true {
      let step = sqlite3_step(statement)
      guard step == SQLITE_ROW else {
        guard step == SQLITE_DONE else { throw failure(step, sql) }
        return rows
      }
      rows.append(
        (0..<sqlite3_column_count(statement)).map { column in
          sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "NULL"
        }.joined(separator: "|"))
    }
  }

  /// The columns of a change row, as the store reads them.
  static let changeColumns =
    "seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at, "
    + "account_id, was_active, is_active"

  /// The baseline's page query: the change rows after `?1`, oldest first.
  func prepareChanges(limit: Int? = nil) throws -> OpaquePointer {
    try prepare(
      "SELECT \(Self.changeColumns) FROM session_changes WHERE seq > ?1 ORDER BY seq"
        + (limit.map { " LIMIT \($0)" } ?? ""))
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
      _ = sqlite3_column_int64(select, 8) + sqlite3_column_int64(select, 9) + sqlite3_column_int64(select, 10)
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

/// The baseline write: the store's write done with `sqlite3_*` calls and nothing on top. In
/// one `BEGIN IMMEDIATE` transaction it reads what the store's plan reads (the active
/// account, the account named, the roster's size when the name is new, the head), updates
/// (or inserts) the account and moves `active_account` when the active account changes,
/// both with the cursor of the coming feed row (which keeps the triggers for other clients
/// aside), inserts the feed row with the values before and after, and commits: the
/// statements the store runs, prepared once, without the plan, the model types and the
/// checks around them. As on the store's writer, triggers do not fire on its connection: it
/// advances `session_feed_tip` itself and reads the retention policy, which every scenario
/// leaves off.
///
/// `external` writes as a `sqlite3` shell user does instead: one autocommit UPDATE of the
/// `session` view, whose triggers change the active account (or add one to an empty
/// roster) and record the change with the origin `external`.
final class RawWriter {
  static let accountColumns = "id, username, is_logged_in, updated_at, seq"
  static let activeSQL =
    "SELECT \(accountColumns) FROM accounts WHERE id = (SELECT account_id FROM active_account WHERE id = 1)"
  static let namedSQL = "SELECT \(accountColumns) FROM accounts WHERE username = ?1"
  static let countSQL = "SELECT count(*) FROM accounts"
  /// The feed's head, as a write of the store reads it: the view the triggers compare with
  /// (the larger of the newest row and the sequence; rows compacted away keep their
  /// cursors used).
  static let headSQL = "SELECT seq FROM session_feed_head"
  static let insertSQL =
    "INSERT INTO accounts (username, is_logged_in, updated_at, seq) VALUES (?1, ?2, ?3, ?4)"
  /// A login or logout keeps the name: the store's UPDATE leaves `username` (and its index) alone.
  static let updateSQL = "UPDATE accounts SET is_logged_in = ?1, updated_at = ?2, seq = ?3 WHERE id = ?4"
  static let pointSQL = "UPDATE active_account SET account_id = ?1, updated_at = ?2, seq = ?3 WHERE id = 1"
  static let recordSQL =
    "INSERT INTO session_changes (at, origin, account_id, old_username, new_username, old_is_logged_in, "
    + "new_is_logged_in, old_updated_at, was_active, is_active) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
  /// What a `sqlite3` shell user types: the triggers of the `session` view do the rest.
  static let externalLoginSQL = "UPDATE session SET username = ?1, is_logged_in = 1 WHERE id = 1"
  static let externalLogoutSQL = "UPDATE session SET is_logged_in = 0 WHERE id = 1"
  static let tipSQL =
    "UPDATE session_feed_tip SET seq = ?1, username = ?2, is_logged_in = ?3, at = ?4 WHERE id = 1 AND seq < ?1"
  static let retentionSQL =
    "SELECT keep_last IS NULL AND max_age_ms IS NULL FROM session_retention WHERE id = 1"
  /// The roster's limit, which the schema enforces too.
  static let rosterLimit: Int64 = 1000

  let db: RawDB
  let username: String
  private let begin: OpaquePointer
  private let commit: OpaquePointer
  private let rollback: OpaquePointer
  private let active: OpaquePointer
  private let named: OpaquePointer
  private let count: OpaquePointer
  private let headQuery: OpaquePointer
  private let insert: OpaquePointer
  private let updateAccount: OpaquePointer
  private let point: OpaquePointer
  private let record: OpaquePointer
  private let tip: OpaquePointer
  private let retention: OpaquePointer
  /// The shell user's statements, prepared only for `external`: a connection whose
  /// triggers are off cannot prepare an UPDATE of a view.
  private let externalWrites: (login: OpaquePointer, logout: OpaquePointer)?
  /// The write's time, `YYYY-MM-DDTHH:MM:SS.mmmZ`, formatted in place.
  private let stamp = UnsafeMutablePointer<CChar>.allocate(capacity: 24)

  /// Prepares the writes on `db`: `username` is the account ``write(login:)`` signs in.
  init(db: RawDB, username: String = "alice", origin: String = "sessionbench", external: Bool = false) throws
  {
    self.db = db
    self.username = username
    // Triggers stay on for the shell user's writes: its UPDATE of the `session` view runs
    // through the view's INSTEAD OF triggers.
    guard csqlite_set_triggers_enabled(db.handle, external ? 1 : 0) == SQLITE_OK else {
      throw BenchError("cannot switch the triggers of a raw connection \(external ? "on" : "off")")
    }
    begin = try db.prepare("BEGIN IMMEDIATE")
    commit = try db.prepare("COMMIT")
    rollback = try db.prepare("ROLLBACK")
    active = try db.prepare(Self.activeSQL)
    named = try db.prepare(Self.namedSQL)
    count = try db.prepare(Self.countSQL)
    headQuery = try db.prepare(Self.headSQL)
    insert = try db.prepare(Self.insertSQL)
    updateAccount = try db.prepare(Self.updateSQL)
    point = try db.prepare(Self.pointSQL)
    record = try db.prepare(Self.recordSQL)
    tip = try db.prepare(Self.tipSQL)
    retention = try db.prepare(Self.retentionSQL)
    externalWrites =
      external ? (try db.prepare(Self.externalLoginSQL), try db.prepare(Self.externalLogoutSQL)) : nil
    sqlite3_bind_text(record, 2, origin, -1, csqlite_transient())
  }

  deinit { stamp.deallocate() }

  /// Signs ``username`` in (`true`), or the active account out, in a transaction of its
  /// own; returns whether it changed anything.
  @discardableResult
  func write(login signIn: Bool) throws -> Bool {
    try write(signIn ? username : nil)
  }

  /// Signs `name` in (and makes it active, adding it when it is new), or for nil the active
  /// account out, in a transaction of its own; returns whether it changed anything.
  @discardableResult
  func write(_ name: String?) throws -> Bool {
    if externalWrites != nil { return try externalWrite(name) }
    try db.run(begin)
    let changed: Bool
    do {
      changed = try apply(name)
      try db.run(commit)
    } catch {
      sqlite3_step(rollback)
      sqlite3_reset(rollback)
      throw error
    }
    return changed
  }

  /// Only the statements of ``write(login:)``, inside a transaction the caller opened;
  /// returns whether it changed anything.
  func update(login signIn: Bool) throws -> Bool {
    if externalWrites != nil { return try externalWrite(signIn ? username : nil) }
    return try apply(signIn ? username : nil)
  }

  /// The shell user's UPDATE of the view. An INSTEAD OF trigger does the work, which
  /// `sqlite3_changes` does not count: whether the write changed anything is whether the
  /// connection's total of changed rows (triggers included) moved.
  private func externalWrite(_ name: String?) throws -> Bool {
    guard let (login, logout) = externalWrites else { throw BenchError("not an external writer") }
    let before = sqlite3_total_changes(db.handle)
    if let name {
      sqlite3_bind_text(login, 1, name, -1, csqlite_transient())
      try db.run(login)
    } else {
      try db.run(logout)
    }
    return sqlite3_total_changes(db.handle) != before
  }

  /// The reads, the plan, and the statements that apply it and record its feed row.
  private func apply(_ name: String?) throws -> Bool {
    let hasActive = try row(active)
    defer {
      sqlite3_reset(active)
      sqlite3_reset(named)
    }
    let activeID: Int64? = hasActive ? sqlite3_column_int64(active, 0) : nil
    guard let name else {
      // A logout of the active account: nothing when none is active or it is signed out.
      guard let activeID, sqlite3_column_int64(active, 2) == 1 else { return false }
      let cursor = try head() + 1
      formatStamp()
      bindRecord(
        account: activeID, before: active, newUsername: nil, wasLoggedIn: 1, isLoggedIn: 0, wasActive: 1)
      bindUpdate(isLoggedIn: 0, cursor: cursor, account: activeID)
      sqlite3_bind_value(tip, 2, sqlite3_column_value(active, 1))
      sqlite3_bind_int64(tip, 3, 0)
      sqlite3_reset(active)
      try db.run(updateAccount)
      try recordChange(cursor)
      return true
    }
    sqlite3_bind_text(named, 1, name, -1, csqlite_transient())
    if try row(named) {
      // A login of an account in the roster: it signs in and becomes active.
      let id = sqlite3_column_int64(named, 0)
      let wasLoggedIn = sqlite3_column_int64(named, 2)
      let wasActive: Int64 = id == activeID ? 1 : 0
      guard wasLoggedIn != 1 || wasActive != 1 else { return false }
      let cursor = try head() + 1
      formatStamp()
      bindRecord(
        account: id, before: named, newUsername: name, wasLoggedIn: wasLoggedIn, isLoggedIn: 1,
        wasActive: wasActive)
      bindUpdate(isLoggedIn: 1, cursor: cursor, account: id)
      bindTip(name, isLoggedIn: 1)
      sqlite3_reset(active)
      sqlite3_reset(named)
      try db.run(updateAccount)
      if wasActive == 0 { try activate(id, cursor: cursor) }
      try recordChange(cursor)
      return true
    }
    // A new account joins, signed in and active, when the roster has room.
    guard try row(count) else { throw BenchError("no count of the roster") }
    let accounts = sqlite3_column_int64(count, 0)
    sqlite3_reset(count)
    guard accounts < Self.rosterLimit else { throw BenchError("the roster is full: \(name) cannot join") }
    let cursor = try head() + 1
    formatStamp()
    sqlite3_reset(active)
    sqlite3_reset(named)
    sqlite3_bind_text(insert, 1, name, -1, csqlite_transient())
    sqlite3_bind_int64(insert, 2, 1)
    bindStamp(insert, 3)
    sqlite3_bind_int64(insert, 4, cursor)
    try db.run(insert)
    let id = sqlite3_last_insert_rowid(db.handle)
    try activate(id, cursor: cursor)
    bindStamp(record, 1)
    sqlite3_bind_int64(record, 3, id)
    sqlite3_bind_null(record, 4)
    sqlite3_bind_text(record, 5, name, -1, csqlite_transient())
    sqlite3_bind_int64(record, 6, 0)
    sqlite3_bind_int64(record, 7, 1)
    bindStamp(record, 8)  // a new account's "before" is stamped with the write's time, as the store does
    sqlite3_bind_int64(record, 9, 0)
    sqlite3_bind_int64(record, 10, 1)
    bindTip(name, isLoggedIn: 1)
    try recordChange(cursor)
    return true
  }

  /// Steps a SELECT once: whether it has a row (left unreset for its columns).
  private func row(_ statement: OpaquePointer) throws -> Bool {
    let rc = sqlite3_step(statement)
    guard rc == SQLITE_ROW || rc == SQLITE_DONE else {
      sqlite3_reset(statement)
      throw BenchError("SQLite error \(rc) in: \(String(cString: sqlite3_sql(statement)))")
    }
    return rc == SQLITE_ROW
  }

  /// The feed's head, read as the store reads it.
  private func head() throws -> Int64 {
    defer { sqlite3_reset(headQuery) }
    guard try row(headQuery) else { throw BenchError("no head of the feed") }
    return sqlite3_column_int64(headQuery, 0)
  }

  /// Binds the feed row of a change to an account in the roster, its "before" taken from
  /// the current row of `before` (an account SELECT); the new username is that row's for nil.
  private func bindRecord(
    account: Int64, before: OpaquePointer, newUsername: String?, wasLoggedIn: Int64, isLoggedIn: Int64,
    wasActive: Int64
  ) {
    bindStamp(record, 1)
    sqlite3_bind_int64(record, 3, account)
    sqlite3_bind_value(record, 4, sqlite3_column_value(before, 1))
    if let newUsername {
      sqlite3_bind_text(record, 5, newUsername, -1, csqlite_transient())
    } else {
      sqlite3_bind_value(record, 5, sqlite3_column_value(before, 1))
    }
    sqlite3_bind_int64(record, 6, wasLoggedIn)
    sqlite3_bind_int64(record, 7, isLoggedIn)
    sqlite3_bind_value(record, 8, sqlite3_column_value(before, 3))
    sqlite3_bind_int64(record, 9, wasActive)
    sqlite3_bind_int64(record, 10, 1)
  }

  private func bindTip(_ username: String, isLoggedIn: Int64) {
    sqlite3_bind_text(tip, 2, username, -1, csqlite_transient())
    sqlite3_bind_int64(tip, 3, isLoggedIn)
  }

  /// Binds the account UPDATE.
  private func bindUpdate(isLoggedIn: Int64, cursor: Int64, account: Int64) {
    sqlite3_bind_int64(updateAccount, 1, isLoggedIn)
    bindStamp(updateAccount, 2)
    sqlite3_bind_int64(updateAccount, 3, cursor)
    sqlite3_bind_int64(updateAccount, 4, account)
  }

  private func activate(_ account: Int64, cursor: Int64) throws {
    sqlite3_bind_int64(point, 1, account)
    bindStamp(point, 2)
    sqlite3_bind_int64(point, 3, cursor)
    try db.run(point)
  }

  /// Inserts the bound feed row and checks that it took the cursor the head promised, moves
  /// the tip (its username and login state bound by the caller) to it and reads the
  /// retention policy.
  private func recordChange(_ cursor: Int64) throws {
    try db.run(record)
    guard sqlite3_last_insert_rowid(db.handle) == cursor else {
      throw BenchError("the feed numbered the change \(sqlite3_last_insert_rowid(db.handle)), not \(cursor)")
    }
    sqlite3_bind_int64(tip, 1, cursor)
    bindStamp(tip, 4)
    try db.run(tip)
    defer { sqlite3_reset(retention) }
    guard try row(retention), sqlite3_column_int64(retention, 0) == 1 else {
      throw BenchError("the raw writer applies no retention policy, and the file has one")
    }
  }

  private func bindStamp(_ statement: OpaquePointer, _ index: Int32) {
    sqlite3_bind_text(statement, index, stamp, 24, csqlite_transient())
  }

  /// Formats the current UTC time, to the millisecond, into ``stamp``.
  private func formatStamp() {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var seconds = now.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func put(_ value: Int, _ digits: Int, at offset: Int) {
      var value = value
      for index in stride(from: offset + digits - 1, through: offset, by: -1) {
        stamp[index] = CChar(48 + value % 10)
        value /= 10
      }
    }
    put(Int(parts.tm_year) + 1900, 4, at: 0)
    stamp[4] = 45  // -
    put(Int(parts.tm_mon) + 1, 2, at: 5)
    stamp[7] = 45
    put(Int(parts.tm_mday), 2, at: 8)
    stamp[10] = 84  // T
    put(Int(parts.tm_hour), 2, at: 11)
    stamp[13] = 58  // :
    put(Int(parts.tm_min), 2, at: 14)
    stamp[16] = 58
    put(Int(parts.tm_sec), 2, at: 17)
    stamp[19] = 46  // .
    put(Int(now.tv_nsec) / 1_000_000, 3, at: 20)
    stamp[23] = 90  // Z
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
