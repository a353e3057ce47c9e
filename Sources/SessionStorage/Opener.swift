import Foundation
import Synchronization

/// Opens a store's file, and is the only place that does: resolves the path, creates the
/// file atomically or inspects an existing one without writing a byte, migrates it, and opens
/// the reader. It returns the connections (a ``SharedDatabase``) and the migrations it
/// applied; ``SessionStore`` only composes them.
///
/// One file, one set of connections per process: the opener keeps a registry of the files
/// this process has open, by device and inode, and hands a second instance on the same file
/// (same path, a symbolic link, a relative path) the connections of the first.
enum Opener {
  /// Every file this process has open, weakly: an entry lives as long as its stores.
  private static let registry = Mutex<[FileCheck.Identity: WeakReference]>([:])

  private struct WeakReference {
    weak var database: SharedDatabase?
  }

  /// The shared connections for the file at `requested` (a symbolic link is resolved), opened
  /// — and the file created and migrated — unless this process has them already. Returns the
  /// resolved path, the connections and the migrations this call applied.
  ///
  /// Runs under the registry's lock, so two instances opening one file at once cannot
  /// both open connections. Nothing here waits on a store's own lock.
  static func open(_ requested: String, _ options: SessionStore.Options) throws -> (
    path: String, database: SharedDatabase, applied: [Migration]
  ) {
    let path = try FileCheck.resolve(requested)
    try FileCheck.requireOpenablePath(path)  // before a directory is made for it
    if options.createsMissingDirectories && !options.readOnly { try FileCheck.makeDirectories(above: path) }
    return try registry.withLock { open in
      open = open.filter { $0.value.database != nil }
      var created: [Migration] = []
      var identity = try FileCheck.identify(path, mayCreate: !options.readOnly)
      if identity == nil {
        created = try Migrator.create(path, options.durability)
        identity = try FileCheck.identify(path, mayCreate: false)
      }
      guard let identity else { throw SessionStorageError(.notFound, "the new file vanished", path: path) }
      if let shared = open[identity]?.database {
        return (path, shared, options.readOnly ? [] : try addWriter(to: shared, options))
      }
      let (shared, applied) = try make(path, identity, options)
      open[identity] = WeakReference(database: shared)
      return (path, shared, created + applied)
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
          "the file needs migration \(missing.name) and was opened read-only: a writable open migrates it",
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
  private static func addWriter(to shared: SharedDatabase, _ options: SessionStore.Options) throws
    -> [Migration]
  {
    let path = shared.path
    var applied: [Migration] = []
    do {
      try shared.addWriter(options) {
        let connection = try Connection(path: path, mode: .readWrite, busyTimeout: options.busyTimeout)
        try connection.setCheckpointsOnClose(false)  // until the file is accepted (the reader holds a -wal)
        applied = try prepareWriter(connection, options)
        try connection.setCheckpointsOnClose(true)
        return connection
      }
    } catch let error as SessionStorageError where error.cannotCreateFiles {
      throw FileCheck.denial(path, writing: true, resultCode: error.resultCode) ?? error
    }
    return applied
  }

}
