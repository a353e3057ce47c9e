import CSQLite
import FeedKit
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

/// One SQLite connection: opened with our pragmas, with a small cache of prepared
/// statements. Not thread-safe; a `Mutex` guards each one that crosses threads.
final class Connection {
  /// How the file is opened.
  enum Mode {
    /// Read and write, creating the file (mode 0600) when it is missing.
    case readWriteCreate
    /// Read and write an existing file.
    case readWrite
    /// Read only; never writes a byte.
    case readOnly
    /// Read only, as a file that cannot change (`immutable=1`): for read-only media, where
    /// SQLite cannot create the `-shm` file a WAL reader needs.
    case immutable
    /// A private database in memory (the path is ignored): the reference schema.
    case memory
  }

  let path: String
  private(set) var handle: OpaquePointer?
  /// The `PRAGMA schema_version` at which the schema was last found to be exactly the
  /// migrations' (see ``Migrator/reverify(_:)``).
  var verifiedSchemaVersion: Int64?
  /// The feed's bounds as last read on this connection (a reader), and the
  /// `PRAGMA data_version` read just before them (``SessionLog/bounds()``).
  var bounds: (dataVersion: Int64, bounds: FeedBounds)?
  /// Prepared statements by their text.
  private var cache = [StatementKey: Statement](minimumCapacity: 64)

  /// Opens `path`. Pragmas that write (WAL) are left to ``configure(_:)``, so a
  /// file can be inspected before anything is written to it.
  init(path: String, mode: Mode, busyTimeout: Duration = .seconds(5)) throws {
    self.path = path
    if mode != .memory { try FileSystem.requireOpenablePath(path) }
    if mode == .readWriteCreate { try Self.createPrivately(path) }
    var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    var name = path
    switch mode {
    case .readWriteCreate, .readWrite: flags |= SQLITE_OPEN_READWRITE
    case .readOnly: flags |= SQLITE_OPEN_READONLY
    case .memory:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY
      name = ":memory:"
    case .immutable:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
      let escaped = Self.percentEncodedPath(path)
      name = "file:\(escaped)?immutable=1"
    }
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(name, &db, flags, nil)
    handle = db
    guard rc == SQLITE_OK else {
      let error = SQLiteFailure.error(rc, db: db, path: path, sql: nil)
      close()
      throw error
    }
    sqlite3_extended_result_codes(db, 1)
    self.busyTimeout = busyTimeout
    installBusyHandler()
  }

  /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
  var busyTimeout: Duration {
    get { busyWait.timeout }
    set { busyWait.timeout = newValue }
  }

  /// Whether the statement running now should stop waiting for a lock (an async write whose
  /// task was cancelled); nil when nothing can cancel it.
  var isCancelled: (@Sendable () -> Bool)? {
    get { busyWait.isCancelled }
    set { busyWait.isCancelled = newValue }
  }

  /// The busy handler's settings. SQLite's own `busy_timeout` sleeps without a way to stop
  /// it; this handler waits the same way in slices of at most 10 ms, checking for
  /// cancellation between them.
  private final class BusyWait {
    var timeout: Duration = .zero
    var isCancelled: (@Sendable () -> Bool)?
    var started = ContinuousClock.now

    /// Whether to retry after `attempts` failed ones: sleeps, or gives up.
    func retry(after attempts: Int32) -> Bool {
      let now = ContinuousClock.now
      if attempts == 0 { started = now }
      if isCancelled?() == true { return false }
      let remaining = timeout - (now - started)
      guard remaining > .zero else { return false }
      // Back off as SQLite does (1, 2, 5, 10 ms), never sleeping past the deadline.
      let step: Duration = .milliseconds([1, 2, 5, 10][min(Int(attempts), 3)])
      let sleep = min(step, remaining)
      usleep(UInt32(clamping: sleep.microseconds))
      return true
    }
  }

  private let busyWait = BusyWait()

  private func installBusyHandler() {
    sqlite3_busy_handler(
      handle,
      { context, attempts in
        guard let context else { return 0 }
        return Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue().retry(after: attempts) ? 1 : 0
      }, Unmanaged.passUnretained(busyWait).toOpaque())
  }

  /// The first 100 bytes of the main database file (zeros past its end) and its size, read
  /// through SQLite's own file object: no descriptor of ours is opened or closed on it.
  func rawHeader() throws -> (bytes: [UInt8], size: Int64) {
    var pointer: UnsafeMutableRawPointer?
    let rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &pointer)
    guard rc == SQLITE_OK, let file = pointer?.assumingMemoryBound(to: sqlite3_file.self),
      let methods = file.pointee.pMethods, let read = methods.pointee.xRead,
      let fileSize = methods.pointee.xFileSize
    else { throw failure(rc == SQLITE_OK ? SQLITE_CANTOPEN : rc, sql: nil) }
    var size: sqlite3_int64 = 0
    let sizeRC = fileSize(file, &size)
    guard sizeRC == SQLITE_OK else { throw failure(sizeRC, sql: nil) }
    var bytes = [UInt8](repeating: 0, count: 100)
    // A short read fills the rest with zeros and reports SQLITE_IOERR_SHORT_READ: expected here.
    let readRC = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, 100, 0) }
    let shortRead = SQLITE_IOERR | (2 << 8)  // SQLITE_IOERR_SHORT_READ, a macro Swift cannot import
    guard readRC == SQLITE_OK || readRC == shortRead else { throw failure(readRC, sql: nil) }
    return (bytes, size)
  }

  deinit { close() }

  /// Whether closing the last connection to the file checkpoints the WAL into it and deletes
  /// the WAL (SQLite's default). A connection that inspects a file turns this off until the
  /// file is accepted, so that refusing a file a crash left with a `-wal` changes neither.
  func setCheckpointsOnClose(_ enabled: Bool) throws {
    let rc = csqlite_set_no_checkpoint_on_close(handle, enabled ? 0 : 1)
    guard rc == SQLITE_OK else { throw failure(rc, sql: nil) }
  }

  /// Whether SQLite's triggers fire for this connection's statements. Changing it expires
  /// the connection's prepared statements, which prepare again at their next use.
  func setTriggersEnabled(_ enabled: Bool) throws {
    let rc = csqlite_set_triggers_enabled(handle, enabled ? 1 : 0)
    guard rc == SQLITE_OK else { throw failure(rc, sql: nil) }
  }

  /// Turns on WAL, foreign keys and the synchronous level. Writes the WAL flag into the
  /// file header, so it runs only after the file was found to be ours.
  func configure(_ durability: SessionStore.Durability) throws {
    try execute("PRAGMA foreign_keys = ON")
    if !isReadOnly {
      let mode = try scalarText("PRAGMA journal_mode = WAL")
      guard mode?.lowercased() == "wal" else {
        throw SessionStorageError(.sqlite, "cannot switch to WAL mode (got \(mode ?? "nothing"))", path: path)
      }
    }
    try execute("PRAGMA synchronous = \(durability.pragmaValue)")
  }

  /// Finalizes every statement and closes the handle; safe to call twice.
  func close() {
    cache.removeAll()
    if let handle { sqlite3_close_v2(handle) }
    handle = nil
  }

  /// Runs one or more statements that return no rows.
  func execute(_ sql: String) throws {
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw failure(rc, sql: sql) }
  }

  /// Runs `body` with the prepared statement for `sql` (from the cache when it was
  /// prepared before), `bindings` bound; resets it afterwards, so no read stays open.
  func query<Result>(
    _ sql: SQL, _ bindings: [SQLiteValue] = [], _ body: (Statement) throws -> Result
  ) throws -> Result {
    let statement = try prepared(sql)
    defer { statement.reset() }
    try statement.bind(bindings)
    return try body(statement)
  }

  /// Runs a statement that returns no rows.
  func run(_ sql: SQL, _ bindings: [SQLiteValue] = []) throws {
    _ = try query(sql, bindings) { try $0.step() }
  }

  /// The statement for `sql`, prepared on first use. The cache is bounded: SQL built at
  /// run time (a migration's, a check's) would otherwise pile up.
  private func prepared(_ sql: SQL) throws -> Statement {
    let key = StatementKey(sql)
    if let statement = cache[key] { return statement }
    let statement = try Statement(connection: self, sql: sql)
    if cache.count >= 64 { cache.removeAll(keepingCapacity: true) }
    cache[key] = statement
    return statement
  }

  /// The first column of the first row of `sql` as text, or nil.
  func scalarText(_ sql: SQL, _ bindings: [SQLiteValue] = []) throws -> String? {
    try query(sql, bindings) { try $0.step() ? $0.text(at: 0) : nil }
  }

  /// The first column of the first row of `sql` as an integer, or nil.
  func scalarInt(_ sql: SQL, _ bindings: [SQLiteValue] = []) throws -> Int64? {
    try query(sql, bindings) { try $0.step() && !$0.isNull(at: 0) ? $0.int64(at: 0) : nil }
  }

  /// Replaces this connection's database with `source`'s, page by page, with SQLite's online
  /// backup API in a single step: `source` is read in one read transaction (a consistent
  /// snapshot; other connections go on writing), and this file is written in one write
  /// transaction, so other connections see all of the new content at its commit or none.
  /// Waits for this file's write lock as the busy handler says.
  func copyPages(from source: Connection) throws {
    guard let backup = sqlite3_backup_init(handle, "main", source.handle, "main") else {
      throw failure(sqlite3_extended_errcode(handle), sql: nil)
    }
    let step = sqlite3_backup_step(backup, -1)
    // Finishing sets this connection's error to the step's, for the message below.
    let finish = sqlite3_backup_finish(backup)
    guard step == SQLITE_DONE else { throw failure(step, sql: nil) }
    guard finish == SQLITE_OK else { throw failure(finish, sql: nil) }
  }

  /// The number of rows the last INSERT, UPDATE or DELETE changed.
  var changes: Int { Int(sqlite3_changes(handle)) }

  /// The rowid of the newest row this connection inserted.
  var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

  /// Rows inserted, updated or deleted since the connection opened, trigger programs
  /// included.
  var totalChanges: Int64 { sqlite3_total_changes64(handle) }

  /// Whether SQLite opened the file read-only (it does so silently when it cannot write it).
  var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

  var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

  func failure(_ rc: Int32, sql: String?) -> SessionStorageError {
    SQLiteFailure.error(rc, db: handle, path: path, sql: sql)
  }

  /// Creates a missing file with mode 0600 before SQLite opens it, whatever the umask (under
  /// `umask 0277` `open` alone gives 0400, and the first write would fail); SQLite gives its
  /// -wal and -shm files the same mode, also past the umask.
  private static func createPrivately(_ path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if fd >= 0 {
      defer { closeDescriptor(fd) }
      guard fchmod(fd, 0o600) == 0 else {
        let err = errno
        unlink(path)
        throw SessionStorageError(
          systemError: err, "cannot give the new database file mode 0600", writing: true, path: path)
      }
      return
    }
    let err = errno
    guard err != EEXIST else { return }
    throw SessionStorageError(systemError: err, "cannot create the database file", writing: true, path: path)
  }
}

extension Connection {
  /// How a transaction begins.
  enum TransactionKind {
    /// Takes the write lock at once (`BEGIN IMMEDIATE`): writers queue on the busy timeout.
    case immediate
    /// Takes locks when first needed (`BEGIN DEFERRED`): for reads.
    case deferred

    var begin: SQL {
      switch self {
      case .immediate: Self.beginImmediate
      case .deferred: Self.beginDeferred
      }
    }

    private static let beginImmediate = SQL("BEGIN IMMEDIATE")
    private static let beginDeferred = SQL("BEGIN DEFERRED")
  }

  private static let commit = SQL("COMMIT")
  private static let rollback = SQL("ROLLBACK")

  /// Runs `body` in a transaction that commits when it returns and rolls back when it throws.
  /// A write transaction whose COMMIT fails throws an error that says what became of it
  /// (``commitFailed(_:)``): never a result for a change that did not commit.
  func transaction<Result>(_ kind: TransactionKind, _ body: () throws -> Result) throws -> Result {
    try run(kind.begin)
    let result: Result
    do {
      result = try body()
    } catch {
      // Harmless to swallow: the caller gets the error that made us roll back, and a
      // ROLLBACK that fails leaves SQLite to roll back when the connection next writes or
      // closes; nothing of this transaction was committed either way.
      if isInTransaction { try? run(Self.rollback) }
      throw error
    }
    do {
      try run(Self.commit)
    } catch {
      if isInTransaction { try? run(Self.rollback) }  // harmless, as above
      throw kind == .immediate ? Self.commitFailed(error) : error
    }
    return result
  }

  /// The error of a write transaction's COMMIT that failed, saying what became of it.
  ///
  /// SQLite rolls the transaction back, and no other connection sees it. After an I/O
  /// error (a failed `fsync`, a failed write), though, its pages may be whole in the `-wal`
  /// file past the last commit SQLite knows of: the next write here overwrites them, and a
  /// close that checkpoints drops them, but a crash of a process that has the file open
  /// makes the next opener recover the WAL from the file, and the change comes back.
  /// Nobody can promise it is gone, so the message does not.
  static func commitFailed(_ error: any Error) -> any Error {
    guard var failure = error as? SessionStorageError, failure.code == .sqlite else { return error }
    let ioError = failure.resultCode.map { $0 & 0xff == SQLITE_IOERR } ?? false
    failure.message =
      ioError
      ? "the change could not be committed: the disk reported an error while SQLite wrote it "
        + "(\(failure.message)). No other process sees it now, but it may still be in the -wal file, "
        + "and if a process that has the store open crashes before the next write, SQLite's recovery "
        + "can bring it back: check the disk, then read the state again before you rely on either outcome"
      : "the change could not be committed (\(failure.message)); SQLite rolled it back"
    return failure
  }
}

extension Connection {
  /// `path` with every UTF-8 byte outside Foundation's `CharacterSet.urlPathAllowed` written as
  /// `%XX` (upper-case hex), the bytes `addingPercentEncoding(withAllowedCharacters:)` writes
  /// (which also encodes `:` in the first segment of a relative path, where it would read as
  /// a scheme); FoundationEssentials has no character sets.
  static func percentEncodedPath(_ path: String) -> String {
    var allowed = Set("!$&'()*+,-./=@_~".utf8)
    if path.hasPrefix("/") { allowed.insert(UInt8(ascii: ":")) }
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for byte in path.utf8 {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "a")...UInt8(ascii: "z"):
        bytes.append(byte)
      case _ where allowed.contains(byte):
        bytes.append(byte)
        if byte == UInt8(ascii: "/") { allowed.insert(UInt8(ascii: ":")) }
      default: bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// A statement cache's key: the SQL text, equal as text, hashed by its length and its last
/// bytes only. Hashing a whole statement's text on every run costs more than the run of a
/// short one; texts that share a hash still differ by `==`.
private struct StatementKey: Hashable {
  let text: String

  init(_ text: String) { self.text = text }

  func hash(into hasher: inout Hasher) {
    hasher.combine(text.utf8.count)
    let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
      hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(32))))
    }
    if hashed == nil { hasher.combine(text) }
  }
}
