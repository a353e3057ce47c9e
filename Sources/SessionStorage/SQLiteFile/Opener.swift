import Synchronization

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

/// The one place that opens a store's file: creates it atomically or inspects it without
/// writing, migrates it, and hands a second instance on the same file (by device and inode)
/// the first one's connections, since one process must hold one set per file.
enum Opener {
  /// Every file this process has open, weakly: an entry lives as long as its stores.
  private static let registry = Mutex<[FileSystem.Identity: WeakReference]>([:])

  private struct WeakReference {
    weak var database: SharedDatabase?
  }

  /// The shared connections for the file at `requested` (a symbolic link is resolved), opened
  /// — and the file created and migrated — unless this process has them already. Returns the
  /// resolved path, the connections and the migrations this call applied.
  ///
  /// Runs under the registry's lock, so two instances opening one file at once cannot
  /// both open connections. Nothing here waits on a store's own lock.
  static func open(_ requested: String, _ options: SessionStore.FileOptions) throws -> (
    path: String, database: SharedDatabase, applied: [Migration]
  ) {
    try FileSystem.requireNoUnexpandedTilde(requested)  // before anything is made for it
    let path = try FileSystem.resolve(requested)
    try FileSystem.requireOpenablePath(path)  // before a directory is made for it
    if options.createsMissingDirectories && !options.readOnly { try FileSystem.makeDirectories(above: path) }
    return try registry.withLock { open in
      open = open.filter { $0.value.database != nil }
      var created: [Migration] = []
      var identity = try FileSystem.identify(path, mayCreate: !options.readOnly)
      if identity == nil {
        created = try Migrator.create(path, options.durability)
        identity = try FileSystem.identify(path, mayCreate: false)
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
  /// (writing nothing), then migrates it unless `readOnly`. It becomes the reader or the
  /// writer, whichever is needed first; the other opens when it is needed.
  private static func make(
    _ path: String, _ identity: FileSystem.Identity, _ options: SessionStore.FileOptions
  ) throws -> (
    SharedDatabase, [Migration]
  ) {
    let (first, inspection, readerMode, refusal) = try openInspected(path, options)
    if options.readOnly {
      if let missing = inspection.pending.first {
        throw SessionStorageError(
          .needsMigration,
          "the file needs migration \(missing.name) and was opened read-only: a writable open migrates it",
          path: path)
      }
      try first.setCheckpointsOnClose(true)
      return (
        SharedDatabase(
          path, identity, options, first: first, readerMode: readerMode, writable: false, refusal: refusal),
        []
      )
    }
    let applied = try prepareWriter(first, options, inspection: inspection)
    try first.setCheckpointsOnClose(true)
    return (
      SharedDatabase(path, identity, options, first: first, readerMode: readerMode, writable: true), applied
    )
  }

  /// Opens the first connection and inspects the file (writing nothing); returns it, what
  /// the inspection found (the pending migrations), and how further connections must open
  /// the file.
  ///
  /// When a `-wal` is already there (a crash left it, or another process has the file open),
  /// the connection does not checkpoint when it closes until the caller accepts the file: a
  /// refused file and its `-wal` stay byte-identical. Without one, closing removes the empty
  /// `-wal` the open created.
  ///
  /// SQLite cannot open a WAL database where it cannot create the `-wal` and `-shm` files.
  /// A writer gets an error that says why (``FileSystem/denial(_:writing:resultCode:)``); a
  /// reader, when no WAL is left to recover, reads the file as immutable.
  ///
  /// A file whose schema was changed by hand is refused for writing; a read-only open
  /// returns the refusal instead, so that ``SessionStore/check()`` can report it (every
  /// other read throws it).
  private static func openInspected(_ path: String, _ options: SessionStore.FileOptions) throws -> (
    Connection, Migrator.Inspection, Connection.Mode, SessionStorageError?
  ) {
    func inspected(_ mode: Connection.Mode) throws -> (
      Connection, Migrator.Inspection, Connection.Mode, SessionStorageError?
    ) {
      let walExisted = FileManager.default.fileExists(atPath: path + "-wal")
      let connection = try Connection(path: path, mode: mode, busyTimeout: options.busyTimeout)
      try connection.setCheckpointsOnClose(!walExisted)
      try FileSystem.inspectHeader(through: connection)
      do {
        return (connection, try Migrator.inspect(connection), mode, nil)
      } catch let error as SessionStorageError where error.code == .tamperedSchema && options.readOnly {
        return (connection, Migrator.Inspection(pending: [], dataVersion: nil), mode, error)
      }
    }
    do {
      return try inspected(
        options.readOnly ? (options.readsPrivateCopy ? .immutable : .readOnly) : .readWrite)
    } catch let error as SessionStorageError where error.cannotCreateFiles {
      let denial = FileSystem.denial(path, writing: !options.readOnly, resultCode: error.resultCode)
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
  /// With the `inspection` this connection made of the file, a file it found up to date and
  /// no other connection changed since is not inspected again.
  private static func prepareWriter(
    _ connection: Connection, _ options: SessionStore.FileOptions, inspection: Migrator.Inspection? = nil
  ) throws -> [Migration] {
    guard !connection.isReadOnly else {
      throw FileSystem.denial(connection.path, writing: true)
        ?? SessionStorageError(
          .readOnly,
          "the file cannot be written (read-only file or file system); open it read-only to read it",
          path: connection.path)
    }
    try connection.configure(options.durability)
    if let inspection, try Migrator.adoptInspection(inspection, on: connection) { return [] }
    let applied = try Migrator.migrate(connection)
    // Remember the schema version found intact, so writes re-verify only when it moves.
    try connection.transaction(.deferred) { try Migrator.reverify(connection) }
    return applied
  }

  /// Gives a file opened by read-only instances its writer, for a writable instance.
  /// Returns the migrations applied (none: read-only opens refuse pending migrations).
  private static func addWriter(to shared: SharedDatabase, _ options: SessionStore.FileOptions) throws
    -> [Migration]
  {
    var applied: [Migration] = []
    try shared.addWriter(options) {
      let opened = try openWriter(shared.path, options)
      applied = opened.applied
      return opened.connection
    }
    return applied
  }

  /// A writer just opened, and the migrations it applied.
  struct OpenedWriter {
    let connection: Connection
    let applied: [Migration]
  }

  /// Opens a writer on a file this process has open already (so accepted: it checkpoints
  /// when it closes) and prepares it.
  static func openWriter(_ path: String, _ options: SessionStore.FileOptions) throws -> sending OpenedWriter {
    do {
      let connection = try Connection(path: path, mode: .readWrite, busyTimeout: options.busyTimeout)
      try connection.setCheckpointsOnClose(false)  // until the file is accepted (the reader holds a -wal)
      let applied = try prepareWriter(connection, options)
      try connection.setCheckpointsOnClose(true)
      return OpenedWriter(connection: connection, applied: applied)
    } catch let error as SessionStorageError where error.cannotCreateFiles {
      throw FileSystem.denial(path, writing: true, resultCode: error.resultCode) ?? error
    }
  }

}

/// The file a store opened, found by device and inode, and whether its path still names it.
/// A file replaced (renamed over, restored with `cp`) or deleted while open, or whose `-wal`
/// was deleted, is noticed here: this process's connections still read the old file, which
/// no other process sees, so every later read and write fails instead.
final class OpenedFile: Sendable {
  let path: String
  private let identity: FileSystem.Identity
  /// Whether the `-wal` is looked after (not for an immutable read, which has none).
  private let watchesWAL: Bool
  private let walPath: String
  /// The `-wal` last seen beside the file, if any was.
  private let wal: Mutex<FileSystem.Identity?>
  /// Why the path no longer names the file, once noticed.
  private let replaced = Mutex<String?>(nil)

  init(path: String, identity: FileSystem.Identity, watchesWAL: Bool) {
    self.path = path
    self.identity = identity
    self.watchesWAL = watchesWAL
    walPath = path + "-wal"
    wal = Mutex(watchesWAL ? FileSystem.identity(of: walPath) : nil)
  }
  /// Why the path no longer names the file, once ``noticeReplacement()`` found it.
  var replacement: String? { replaced.withLock { $0 } }

  /// Looks at the path again (`stat`, which opens nothing): true when it just found that
  /// the file was replaced or deleted. From then on every read fails, since this
  /// process's connections still read the old file, which no other process sees.
  func noticeReplacement() -> Bool {
    guard let reason = replacementReason() else { return false }
    return replaced.withLock { replaced in
      defer { replaced = replaced ?? reason }
      return replaced == nil
    }
  }

  /// Opens another connection with `make` on the file the store opened: refused when the
  /// path no longer names it, looked at before and after (a connection opened by path
  /// after a replacement would read and write the new file).
  func open(_ make: () throws -> sending Connection) throws -> sending Connection {
    try requireSameFile()
    let connection = try make()
    try requireSameFile()
    return connection
  }

  /// Throws when the path no longer names the file the store opened.
  func requireSameFile() throws {
    if let reason = replacement ?? replacementReason() {
      throw SessionStorageError(.fileReplaced, reason + "; open the store again", path: path)
    }
  }

  private func replacementReason() -> String? {
    // An error here (the path names a directory, an empty file…) means the same as
    // nothing there: not the file the store opened.
    switch try? FileSystem.identify(path, mayCreate: true) {
    case identity?: walDeletion()
    case .some: "the file was replaced: another file has its name now"
    case nil: "the file was deleted or cannot be found any more"
    }
  }

  /// Why the `-wal` is a problem: it was deleted while a connection of this process had it
  /// open, so that the connection's commits go where no other process looks. SQLite deletes
  /// it only when the last connection closes, and writes it only in WAL mode: a file in
  /// another journal mode (switched to DELETE with the sqlite3 shell, rebuilt from `.dump`)
  /// has none, and one whose WAL no connection of ours holds (another process's, closed
  /// while our reader read in rollback mode) is not ours to miss. What decides is whether
  /// a descriptor of this process holds the `-wal` last seen, with no name left.
  private func walDeletion() -> String? {
    guard watchesWAL else { return nil }
    let current = FileSystem.identity(of: walPath)
    return wal.withLock { seen in
      if let previous = seen, previous != current, FileSystem.isHeldAfterDeletion(previous) {
        return "the -wal file beside it was deleted while the store had it open"  // kept: every look says so
      }
      seen = current
      return nil
    }
  }
}
