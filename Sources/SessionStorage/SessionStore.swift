import FeedKit
import Foundation
import Synchronization

/// Persists who is signed in in a SQLite file, and turns every committed change into one
/// entry of an ordered, resumable feed, whichever process or tool made it.
///
/// A store is `Sendable`: share one instance between tasks and threads. It holds two
/// connections (a writer and a reader) and, while anyone subscribes, a watcher that
/// notices commits of other processes.
public final class SessionStore: Sendable {
  /// How durable a commit is.
  public enum Durability: String, Sendable {
    /// `synchronous=FULL`: a commit survives power loss. The default.
    case full = "FULL"
    /// `synchronous=NORMAL`: faster; the last commits may be lost on power loss (never on a crash).
    case normal = "NORMAL"
  }

  /// How a store opens its file.
  public struct Options: Sendable {
    /// How durable a commit is.
    public var durability: Durability
    /// How long a write waits for another writer before failing with `SQLITE_BUSY`.
    public var busyTimeout: Duration
    /// The origin recorded on this store's writes; `external` is reserved.
    public var origin: String
    /// Open without writing: no creation, no migration, no writes.
    public var readOnly: Bool

    /// Creates options; the origin defaults to the process's name.
    public init(
      durability: Durability = .full, busyTimeout: Duration = .seconds(5),
      origin: String = ProcessInfo.processInfo.processName, readOnly: Bool = false
    ) {
      self.durability = durability
      self.busyTimeout = busyTimeout
      self.origin = origin
      self.readOnly = readOnly
    }
  }

  /// The database file (a symbolic link is resolved to its target when the store opens).
  public let path: String
  /// The options it was opened with.
  public let options: Options
  /// The migrations this open applied (empty when the file was up to date).
  public let appliedMigrations: [Migration]
  /// The feed of changes, for building subscriptions.
  public let feed: Feed<SessionChange, SessionState>

  private let writer: Mutex<Connection>
  let log: SessionLog
  private let beacon: Beacon

  /// Opens the store at `path`, creating it (mode 0600) and applying pending migrations.
  /// - Throws: ``SessionStorageError``: a file that is not a database, someone else's
  ///   database, a newer schema, mismatching migrations, a missing file in read-only mode.
  ///   Such a file is left byte-identical.
  public init(path: String, options: Options = Options()) throws {
    guard !options.origin.isEmpty, options.origin.count <= 64, options.origin != "external",
      options.origin.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
    else {
      throw SessionStorageError(
        .invalidOrigin, "origin '\(options.origin)' must be 1 to 64 printable characters and not 'external'")
    }
    let path = try FileCheck.resolve(path)
    self.path = path
    self.options = options
    let exists = try FileCheck.inspect(path, mayCreate: !options.readOnly)
    let created = exists ? [] : try Migrator.create(path, synchronous: options.durability.rawValue)

    let (writer, pending, readerMode) = try Self.openInspected(path, options)
    if options.readOnly {
      if let missing = pending.first {
        throw SessionStorageError(
          .needsMigration,
          "the file needs migration \(missing.name) and was opened read-only; run 'sessionctl migrate'",
          path: path)
      }
      appliedMigrations = []
    } else {
      guard !writer.isReadOnly else {
        throw SessionStorageError(
          .readOnly,
          "the file cannot be written (read-only file or file system); open it read-only to read it",
          path: path)
      }
      try writer.configure(synchronous: options.durability.rawValue)
      appliedMigrations = try created + Migrator.migrate(writer)
    }
    let reader = try Connection(path: path, mode: readerMode, busyTimeout: options.busyTimeout)
    try reader.execute("PRAGMA query_only = ON")
    log = SessionLog(reader: reader)
    self.writer = Mutex(writer)

    let watch = CrossProcessWatch(path: path, busyTimeout: options.busyTimeout)
    beacon = Beacon(
      activate: { beacon in watch.start { [weak beacon] in beacon?.signal() } }, deactivate: { watch.stop() })
    feed = Feed(source: log, signal: beacon)
  }

  /// Opens the first connection and inspects the file (writing nothing); returns it, the
  /// pending migrations, and how further connections must open the file.
  ///
  /// SQLite cannot open a WAL database where it cannot create the `-wal` and `-shm` files.
  /// A writer gets a `readOnly` error then; a reader, when no WAL is left to recover, reads
  /// the file as immutable (read-only media cannot change under it).
  private static func openInspected(_ path: String, _ options: Options) throws -> (
    Connection, [Migration], Connection.Mode
  ) {
    do {
      let connection = try Connection(
        path: path, mode: options.readOnly ? .readOnly : .readWrite, busyTimeout: options.busyTimeout)
      return (connection, try Migrator.pending(on: connection), options.readOnly ? .readOnly : .readWrite)
    } catch let error as SessionStorageError
      where error.isCantOpen && FileManager.default.fileExists(atPath: path)
    {
      guard options.readOnly else {
        throw SessionStorageError(
          .readOnly,
          "cannot create SQLite's -wal and -shm files next to the database (read-only directory or file system)",
          path: path, resultCode: error.resultCode)
      }
      guard !FileManager.default.fileExists(atPath: path + "-wal") else { throw error }
      let connection = try Connection(path: path, mode: .immutable, busyTimeout: options.busyTimeout)
      return (connection, try Migrator.pending(on: connection), .immutable)
    }
  }

  /// The current state.
  public var state: SessionState {
    get throws { try log.state() }
  }

  /// Signs in as `username` (validated, stored in NFC).
  /// - Returns: the committed change, or nil when already signed in as that user.
  /// - Throws: ``SessionStorageError`` (`invalidUsername` before anything is written).
  @discardableResult
  public func login(username: String) throws -> SessionEntry? { try write(.login(username: username)) }

  /// Signs out. The username is kept, so an app can offer "continue as …" and `status`
  /// can say who signed out; the ``SessionEvent/loggedOut(username:)`` event names them.
  /// - Returns: the committed change, or nil when nobody was signed in.
  @discardableResult
  public func logout() throws -> SessionEntry? { try write(.logout) }

  /// Changes the username and leaves the login state as it is.
  /// - Returns: the committed change, or nil when the username is already `username`.
  @discardableResult
  public func rename(to username: String) throws -> SessionEntry? { try write(.rename(to: username)) }

  /// Runs one statement on the writer connection and returns its first integer, for tests
  /// that bend SQLite's limits (`PRAGMA max_page_count`).
  func writerInteger(_ sql: String) throws -> Int64? {
    try writer.withLock { try $0.scalarInt(sql) }
  }

  private func requireWritable() throws {
    guard !options.readOnly else {
      throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
    }
  }

  /// Runs a maintenance DELETE on the feed in an IMMEDIATE transaction.
  func maintain(_ sql: String, _ bindings: [SQLiteValue]) throws -> Compaction {
    try requireWritable()
    return try writer.withLock { connection in
      try connection.transaction(.immediate) {
        try connection.run(sql, bindings)
        return Compaction(removed: connection.changes, bounds: try SessionLog.bounds(on: connection))
      }
    }
  }

  /// Runs the write as one conditional UPDATE in an IMMEDIATE transaction and returns the
  /// entry its trigger wrote, or nil when the WHERE clause found nothing to change.
  private func write(_ write: SessionWrite) throws -> SessionEntry? {
    let (sql, bindings) = write.statement
    try requireWritable()
    let entry = try writer.withLock { connection in
      try connection.transaction(.immediate) { () throws -> SessionEntry? in
        try connection.run(sql, bindings + [.text(options.origin)])
        guard connection.changes > 0 else { return nil }
        guard let entry = try SessionLog.newest(on: connection) else {
          throw SessionStorageError(
            .corrupt, "the session_feed trigger wrote no change (was the schema edited by hand?)", path: path)
        }
        return entry
      }
    }
    if entry != nil { beacon.signal() }
    return entry
  }
}
