import FeedKit
import Foundation
import Synchronization

/// The connections this process holds on one database file, shared by every
/// ``SessionStore`` opened on it, whatever path, symbolic link or relative spelling named
/// the file (it is found by device and inode).
///
/// One file, one set of connections per process: a second instance costs no descriptor,
/// and no instance can disturb another's locks. The file is closed when the last instance
/// (and the last subscription made from one) is released.
final class SharedDatabase: Sendable {
  /// The writer connection and the settings it was last switched to.
  private struct Writer {
    var connection: Connection
    var durability: SessionStore.Durability
  }

  /// The path of the instance that opened the file first; errors name it.
  let path: String
  let log: SessionLog
  let beacon: Beacon
  let feed: Feed<SessionChange, SessionState>
  private let writer: Mutex<Writer?>
  /// One wake-up per commit: a commit of this process wakes subscribers as it returns,
  /// and the cross-process watcher, which sees the same commit move `PRAGMA data_version`,
  /// then finds nothing new and stays quiet.
  private let wakes = WakeOnce()
  /// Where async writes wait for the writer, off their callers' actors.
  let writeQueue = DispatchQueue(label: "SessionStorage.write")

  /// Every file this process has open, weakly: an entry lives as long as its stores.
  private static let open = Mutex<[FileCheck.Identity: WeakReference]>([:])

  private struct WeakReference {
    weak var database: SharedDatabase?
  }

  /// The shared connections for `path`, opened (and the file created and migrated) unless
  /// this process has them already. Returns them and the migrations this call applied.
  ///
  /// Runs under the registry's lock, so two instances opening one file at once cannot
  /// both open connections. Nothing here waits on a store's own lock.
  static func open(_ path: String, _ options: SessionStore.Options) throws -> (SharedDatabase, [Migration]) {
    try open.withLock { open in
      open = open.filter { $0.value.database != nil }
      var created: [Migration] = []
      var identity = try FileCheck.identify(path, mayCreate: !options.readOnly)
      if identity == nil {
        created = try Migrator.create(path, options.durability)
        identity = try FileCheck.identify(path, mayCreate: false)
      }
      guard let identity else { throw SessionStorageError(.notFound, "the new file vanished", path: path) }
      if let shared = open[identity]?.database {
        return (shared, options.readOnly ? [] : try shared.openWriter(options))
      }
      let (shared, applied) = try make(path, identity, options)
      open[identity] = WeakReference(database: shared)
      return (shared, created + applied)
    }
  }

  /// Opens a file this process does not have open yet: the first connection inspects it
  /// (writing nothing), then it is migrated unless `readOnly`, then the reader opens.
  private static func make(
    _ path: String, _ identity: FileCheck.Identity, _ options: SessionStore.Options
  ) throws -> (
    SharedDatabase, [Migration]
  ) {
    let (first, pending, readerMode, refusal) = try openInspected(path, options)
    if options.readOnly {
      if let missing = pending.first {
        throw SessionStorageError(
          .needsMigration,
          "the file needs migration \(missing.name) and was opened read-only; run 'sessionctl migrate'",
          path: path)
      }
      try first.setCheckpointsOnClose(true)
      return (
        try SharedDatabase(
          path, identity, options, reader: first, readerMode: readerMode, writer: nil, refusal: refusal), []
      )
    }
    let applied = try prepareWriter(first, options)
    try first.setCheckpointsOnClose(true)
    let reader = try Connection(path: path, mode: readerMode, busyTimeout: options.busyTimeout)
    return (
      try SharedDatabase(path, identity, options, reader: reader, readerMode: readerMode, writer: first),
      applied
    )
  }

  private init(
    _ path: String, _ identity: FileCheck.Identity, _ options: SessionStore.Options,
    reader: sending Connection, readerMode: Connection.Mode, writer: sending Connection?,
    refusal: SessionStorageError? = nil
  ) throws {
    try reader.execute("PRAGMA query_only = ON")
    self.path = path
    log = SessionLog(
      reader: reader, path: path, identity: identity, walExpected: readerMode != .immutable, refusal: refusal)
    self.writer = Mutex(writer.map { Writer(connection: $0, durability: options.durability) })
    let watch = CrossProcessWatch(
      path: path, pollInterval: options.safetyPollInterval, dataVersion: { [log] in try log.dataVersion() },
      replaced: { [log] in log.noticeReplacement() })
    let log = self.log
    beacon = Beacon(
      activate: { [wakes] beacon in
        beacon.report(
          watch.start { [weak beacon, weak log] in
            // Another process's commit, or one of ours seen again: wake only for a new one.
            // A tip that cannot be read (a replaced file) wakes them: their read says why.
            // Held weakly: a watcher winding down must not keep the file open.
            guard let beacon, let log else { return }
            if wakes.isNew(try? log.tip()) { beacon.signal() }
          })
      },
      deactivate: { watch.stop() })
    feed = Feed(source: log, signal: beacon)
  }

  /// Opens the first connection and inspects the file (writing nothing); returns it, the
  /// pending migrations, and how further connections must open the file.
  ///
  /// When a `-wal` is already there (a crash left it, or another process has the file open),
  /// the connection does not checkpoint when it closes until the caller accepts the file: a
  /// refused file and its `-wal` stay byte-identical. Without one, closing removes the empty
  /// `-wal` the open created, as before.
  ///
  /// SQLite cannot open a WAL database where it cannot create the `-wal` and `-shm` files.
  /// A writer gets an error that says why (``FileCheck/denial(_:writing:resultCode:)``); a
  /// reader, when no WAL is left to recover, reads the file as immutable.
  ///
  /// A file whose schema was changed by hand is refused for writing; a read-only open
  /// returns the refusal instead, so that ``SessionStore/check()`` can report it (every
  /// other read throws it).
  private static func openInspected(_ path: String, _ options: SessionStore.Options) throws -> (
    Connection, [Migration], Connection.Mode, SessionStorageError?
  ) {
    func inspected(_ mode: Connection.Mode) throws -> (
      Connection, [Migration], Connection.Mode, SessionStorageError?
    ) {
      let walExisted = FileManager.default.fileExists(atPath: path + "-wal")
      let connection = try Connection(path: path, mode: mode, busyTimeout: options.busyTimeout)
      try connection.setCheckpointsOnClose(!walExisted)
      try FileCheck.inspectHeader(through: connection)
      do {
        return (connection, try Migrator.pending(on: connection), mode, nil)
      } catch let error as SessionStorageError where error.code == .tamperedSchema && options.readOnly {
        return (connection, [], mode, error)
      }
    }
    do {
      return try inspected(options.readOnly ? .readOnly : .readWrite)
    } catch let error as SessionStorageError where error.cannotCreateFiles {
      let denial = FileCheck.denial(path, writing: !options.readOnly, resultCode: error.resultCode)
      // A reader that may read the file but cannot create the -wal and -shm in its
      // directory (read-only mount, no write permission) reads it as immutable, unless a
      // WAL left behind must be recovered first. Any other cause (a descriptor limit, say)
      // is an error: an immutable reader would never see another commit.
      guard options.readOnly, denial?.code == .readOnly,
        !FileManager.default.fileExists(atPath: path + "-wal")
      else { throw denial ?? error }
      return try inspected(.immutable)
    }
  }

  /// Turns a new read-write connection into the writer: refuses a file SQLite opened
  /// read-only, switches to WAL and the durability asked for, applies pending migrations.
  private static func prepareWriter(_ connection: Connection, _ options: SessionStore.Options) throws
    -> [Migration]
  {
    guard !connection.isReadOnly else {
      throw FileCheck.denial(connection.path, writing: true)
        ?? SessionStorageError(
          .readOnly,
          "the file cannot be written (read-only file or file system); open it read-only to read it",
          path: connection.path)
    }
    try connection.configure(options.durability)
    let applied = try Migrator.migrate(connection)
    // Remember the schema version found intact, so writes re-verify only when it moves.
    try connection.transaction(.deferred) { try Migrator.reverify(connection) }
    return applied
  }

  /// Gives a file opened by read-only instances its writer, for a writable instance.
  /// Returns the migrations applied (none: read-only opens refuse pending migrations).
  private func openWriter(_ options: SessionStore.Options) throws -> [Migration] {
    try writer.withLock { writer in
      guard writer == nil else { return [] }
      let connection: Connection
      do {
        connection = try Connection(path: path, mode: .readWrite, busyTimeout: options.busyTimeout)
        try connection.setCheckpointsOnClose(false)  // until the file is accepted (the reader holds a -wal)
        let applied = try Self.prepareWriter(connection, options)
        try connection.setCheckpointsOnClose(true)
        writer = Writer(connection: connection, durability: options.durability)
        return applied
      } catch let error as SessionStorageError where error.cannotCreateFiles {
        throw FileCheck.denial(path, writing: true, resultCode: error.resultCode) ?? error
      }
    }
  }

  /// Runs `body` on the writer, switched first to this instance's durability and busy
  /// timeout (each instance keeps its own). While it waits for another process's lock, it
  /// gives up as soon as `isCancelled` says so.
  func withWriter<Result: Sendable>(
    _ options: SessionStore.Options, isCancelled: (@Sendable () -> Bool)? = nil,
    _ body: (Connection) throws -> Result
  ) throws -> Result {
    try writer.withLock { writer in
      guard let current = writer else {
        throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
      }
      // A write into a file that was replaced or deleted would be lost to everyone else.
      try log.requireSameFile()
      if current.durability != options.durability {
        try current.connection.execute("PRAGMA synchronous = \(options.durability.pragmaValue)")
        writer?.durability = options.durability
      }
      current.connection.busyTimeout = options.busyTimeout
      current.connection.isCancelled = isCancelled
      defer { current.connection.isCancelled = nil }
      return try body(current.connection)
    }
  }
}

extension SharedDatabase {
  /// Wakes subscribers for a commit this process made.
  func wake(after entry: SessionEntry) {
    _ = wakes.isNew("\(entry.cursor)@\(Timestamp.format(entry.time))")
    beacon.signal()
  }
}

/// Which change subscribers were last woken for (``SessionLog/tip()``).
final class WakeOnce: Sendable {
  private let wokenFor = Mutex<String?>(nil)

  /// Records that subscribers are woken for `tip`; whether it is another one than last time
  /// (an unknown tip always is).
  func isNew(_ tip: String?) -> Bool {
    wokenFor.withLock { woken in
      defer { woken = tip }
      return tip == nil || tip != woken
    }
  }
}
