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

extension SessionFile {
  /// What ``backup(to:overwrite:)`` wrote.
  public struct BackupResult: Sendable, Equatable {
    /// The backup file, as given.
    public var path: String
    /// The newest cursor in the backup: the store's head when the copy was taken.
    public var head: Cursor
    /// How many changes the backup's feed holds.
    public var entries: Int
    /// The size of the backup file in bytes.
    public var bytes: Int64
  }

  /// What ``restore(from:)`` did.
  public struct RestoreResult: Sendable, Equatable {
    /// The store that was restored.
    public var path: String
    /// The backup it was restored from.
    public var source: String
    /// The store's newest cursor before the restore.
    public var previousHead: Cursor
    /// The newest cursor now: the backup's.
    public var head: Cursor
    /// How many changes the feed holds now.
    public var entries: Int
  }

  /// Writes a consistent copy of the store to `path` while writers and subscribers, in this
  /// process and others, go on.
  ///
  /// The copy is SQLite's online backup API, run from the store's reader in one read
  /// transaction: it is the store as of one commit, never half of one. It is written into a
  /// new private file (mode 0600) beside `path`, verified — opened read-only as a store of
  /// its own, and ``SessionStore/check()`` must pass — and only then linked into place (or, with
  /// `overwrite`, renamed over the old file). A failure leaves nothing at `path`, and an
  /// existing file there untouched.
  ///
  /// `path` is never one of the store's own files — the database, its `-wal`, `-shm` or
  /// `-journal`, by any name (a symbolic link to them or to their directory, a hard link) —
  /// nor a name whose own `-wal`, `-shm` or `-journal` would be one: while any process has
  /// the store open, replacing one of them loses acknowledged commits or corrupts the
  /// store. Nor does it replace anything but a regular file (a device, a FIFO, a
  /// directory), also with `overwrite`. Nor is the backup paired with a `-wal`, `-shm` or
  /// `-journal` beside `path` that is not its own, which SQLite would replay into it: with
  /// no file at `path`, any of them is refused and named (it is left from another database,
  /// which a process may still have open); a file replaced with `overwrite` takes its empty
  /// `-wal` and `-shm` with it, and is refused while its `-wal` holds commits or its
  /// `-journal` a transaction. New stores refuse the same leftovers.
  /// - Throws: ``SessionStorageError``: `storeFile` when `path` is one of the store's files,
  ///   `notARegularFile` when it exists and is not a regular file, `fileExists` when it
  ///   exists and `overwrite` is false, or a `-wal`, `-shm` or `-journal` beside it is not
  ///   its own (as above), `invalidBackup` when the copy failed its check (`corrupt` or
  ///   `invalidBackup` naming the store's path, not the backup's, when the store fails
  ///   ``SessionStore/check()`` too: the copy is its pages as they are), `pathTooLong`
  ///   when the path is longer than SQLite opens, `readOnly`, `notFound`, `full` or `sqlite`
  ///   when the file cannot be created; `notFound` for a path that begins with `~` and leads to nothing (`~`
  ///   is not expanded: only a shell does that).
  public func backup(to path: String, overwrite: Bool = false) throws -> BackupResult {
    try StoreFiles(of: self.path).refuse(path, "nothing was written: back up to a file of its own")
    try FileSystem.requireNoUnexpandedTilde(path, "nothing was written")
    if let kind = FileSystem.kindOtherThanRegular(path) {
      throw SessionStorageError(
        .notARegularFile,
        "this is \(kind), not a regular file, and a backup replaces nothing but a regular file (with "
          + "--force neither); nothing was written: choose a file name", path: path)
    }
    if FileSystem.lexists(path), !overwrite {
      throw SessionStorageError(
        .fileExists, "the file exists; nothing was written (overwrite it with --force)", path: path)
    }
    let what = "the backup file in \(FileSystem.parent(of: path))"
    // A -wal, -shm or -journal beside `path` that is not its own is refused before the copy:
    // the staging refuses those of a missing file, this those of a file to be replaced.
    if FileSystem.lexists(path) { try StagedFile.requireNoLeftovers(beside: path, "nothing was written") }
    let staged = try StagedFile(
      beside: path, purpose: "backup", what: what, consequence: "nothing was written")
    defer { staged.discard() }
    do {
      try log.file.requireSameFile()
      try log.reader.withLock { reader in
        // The private file is opened as it is (SQLite never creates it) and written without a
        // rollback journal: a failed copy is discarded, and no `-journal` is made beside it.
        let destination = try Connection(
          path: staged.temporary, mode: .readWrite, busyTimeout: options.busyTimeout)
        defer { destination.close() }
        _ = try destination.scalarText(Self.journalOffSQL)
        try destination.copyPages(from: reader)
      }
    } catch var error as SessionStorageError {
      error.path = path
      throw error.code == .corrupt ? storeFailure(else: error) : error
    }
    // The verifying store is released (its connections closed) before the file is placed.
    let (head, entries): (Cursor, Int)
    do {
      (head, entries) = try {
        try Self.verifiedBackup(staged.temporary, origin: options.origin, shown: path, privateCopy: true) {
          failure in
          "the copy failed its check (\(failure)); nothing was written"
        }.summary
      }().counts
    } catch let error as SessionStorageError {
      // The copy is the store's pages as of one commit: what fails in it fails in the store.
      throw storeFailure(else: error)
    }
    guard let bytes = FileSystem.sizeIfPresent(staged.temporary) else {
      throw SessionStorageError(
        systemError: errno, "cannot read the backup's size", writing: false, path: path)
    }
    if overwrite {
      // An empty -wal and its -shm, left by a reader, belong to the old file.
      for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
    }
    guard try staged.place(overwrite: overwrite, what: what) else {
      throw SessionStorageError(
        .fileExists, "the file exists; nothing was written (overwrite it with --force)", path: path)
    }
    return BackupResult(path: path, head: head, entries: entries, bytes: bytes)
  }

  /// Replaces the store's content with a backup's, while other processes keep it open.
  ///
  /// The backup is verified first: it must open as a store of this build's schema (not
  /// newer, no pending migration), pass ``SessionStore/check()``, and have the store's page size and text
  /// encoding; anything else is refused and the store is left untouched. The copy then runs SQLite's backup API *into* the store,
  /// through its writer, as one write transaction: every connection, in every process,
  /// sees the old content until the commit and the backup's after it. The file keeps its
  /// inode, its `-wal` and its locks, so nobody has to stop.
  ///
  /// Subscribers whose last entry the restore removed or replaced (an older backup) end
  /// with `FeedError.historyRewritten` instead of skipping or repeating cursors; a restore
  /// that only adds entries after theirs looks to them like new commits.
  /// - Throws: ``SessionStorageError``: `readOnly` for a read-only store; `storeFile` when
  ///   `backupPath` is one of the store's own files (the database, its `-wal`, `-shm` or
  ///   `-journal`, by any name, as ``backup(to:overwrite:)`` refuses them); the backup's own
  ///   refusal (`notFound`, `permissionDenied`, `notADatabase` — also for anything but a
  ///   regular file —, `foreignDatabase`, `newerSchema`, `checksumMismatch`…);
  ///   `invalidBackup` when it needs migration, fails its check or has another page size
  ///   or text encoding (UTF-16: SQLite copies pages as they are);
  ///   `busy` when another writer held the lock past the busy timeout.
  public func restore(from backupPath: String) throws -> RestoreResult {
    try backend.requireWritable()
    try StoreFiles(of: path).refuse(backupPath, "the store was not changed")
    try FileSystem.requireNoUnexpandedTilde(backupPath, "the store was not changed")
    guard FileSystem.lexists(backupPath) else {
      throw SessionStorageError(.notFound, "no such file; the store was not changed", path: backupPath)
    }
    let backup = try Self.verifiedBackup(backupPath, origin: options.origin, shown: backupPath) { failure in
      "\(failure); the store was not changed"
    }
    // SQLite's backup API copies pages as they are: a backup whose pages the store cannot
    // take as they are is refused here, before anything is written.
    let theirs = try backup.store.log.reader.withLock { try Layout($0) }
    let ours = try log.reader.withLock { try Layout($0) }
    guard theirs.pageSize == ours.pageSize else {
      throw SessionStorageError(
        .invalidBackup,
        "its page size (\(theirs.pageSize)) differs from the store's (\(ours.pageSize)), which SQLite cannot "
          + "restore into a WAL database; the store was not changed. Stop every process that has the store open, "
          + "then put a copy of the backup in its place and remove the store's -wal and -shm",
        path: backupPath)
    }
    guard theirs.encoding == ours.encoding else {
      // The copy would commit the other encoding into a file whose open connections read it as
      // their own: every one of them, in every process, fails from then on.
      // The shell makes a new file UTF-8 unless told otherwise before its first table.
      let name = ours.encoding.filter { $0 != "-" }  // UTF16le: a bare word to SQL
      let encoding = ours.encoding == "UTF-8" ? "" : "(echo \"PRAGMA encoding = \(name);\"; "
      let dump = encoding.isEmpty ? "sqlite3 FILE .dump" : encoding + "sqlite3 FILE .dump)"
      let copy = "'\(dump) | sqlite3 COPY && sqlite3 COPY \"PRAGMA user_version = \(theirs.userVersion)\"'"
      throw SessionStorageError(
        .invalidBackup,
        "its text encoding is \(theirs.encoding) and the store's \(ours.encoding), and SQLite cannot restore a file "
          + "of one encoding into a store of another; the store was not changed. Convert a copy to \(ours.encoding) "
          + "(\(copy)), then restore the copy",
        path: backupPath)
    }
    let previousHead = try log.bounds().head
    try database.withWriter(options) { writer in
      // A connection of its own (the verifying store's reader is behind its lock), read-only.
      let source = try Connection(path: backup.store.path, mode: .readOnly, busyTimeout: options.busyTimeout)
      defer { source.close() }
      // One read transaction: the copy is the content compared here (the backup API reads
      // inside the transaction it finds open), which must still be the one verified.
      try source.transaction(.deferred) {
        guard try Self.summary(on: source) == backup.summary else {
          throw SessionStorageError(
            .invalidBackup, "it changed after it was verified; the store was not changed", path: backupPath)
        }
        try writer.copyPages(from: source)
      }
    }
    backend.beacon.signal()  // this process's subscribers read again, and find what changed
    let (head, entries) = try Self.summary(of: log).counts
    return RestoreResult(
      path: path, source: backupPath, previousHead: previousHead, head: head, entries: entries)
  }

  /// Opens `path` read-only as a store of its own and requires ``SessionStore/check()`` to pass; returns
  /// it (for reading) and its head and entry count. A refusal of the open or a failed check
  /// throws with the message `describe` makes of the failure, naming the file `shown`.
  /// A `privateCopy` (a backup's staged file, which nothing else writes) is read as
  /// immutable: no lock, and no `-wal` or `-shm` made beside it.
  private static func verifiedBackup(
    _ path: String, origin: String, shown: String, privateCopy: Bool = false, _ describe: (String) -> String
  ) throws -> (store: SQLiteFile, summary: Summary) {
    let store: SQLiteFile
    do {
      var options = SessionStore.FileOptions(origin: origin, readOnly: true)
      options.readsPrivateCopy = privateCopy
      store = try SQLiteFile(path: path, options: options)
    } catch var error as SessionStorageError {
      if error.code == .needsMigration {
        error.code = .invalidBackup
        error.message =
          "it was made by an older version and needs migration (\(error.message)): migrate a copy first "
          + "('cp FILE COPY && sessionctl --db COPY migrate'), then restore the copy"
      }
      error.message = describe(error.message)
      error.path = shown
      throw error
    }
    // A read that fails names the file as shown, never the name it is checked under.
    func named<T>(_ read: () throws -> T) throws -> T {
      do {
        return try read()
      } catch var error as SessionStorageError {
        error.message = describe(error.message)
        error.path = shown
        throw error
      }
    }
    let failed = try named { try store.check().filter { $0.verdict == .failed } }
    guard failed.isEmpty else {
      throw SessionStorageError(
        .invalidBackup, describe("failed its check: \(Self.list(failed))"), path: shown)
    }
    return (store, try named { try summary(of: store.log) })
  }

  /// Turns a connection's rollback journal off.
  private static let journalOffSQL = SQL("PRAGMA journal_mode = OFF")

  /// The failed verifications, as a message lists them.
  private static func list(_ failed: [CheckResult]) -> String {
    failed.map { "\($0.check.rawValue): \($0.detail)" }.joined(separator: "; ")
  }

  /// Why a copy of this store failed its verification, told of the store when the store
  /// itself fails ``SessionStore/check()`` (a corrupt store gives a corrupt copy), naming the store's
  /// path; else `copyFailure`, which is the copy's own (a disk that failed to write it).
  private func storeFailure(else copyFailure: SessionStorageError) -> SessionStorageError {
    let repair =
      "; nothing was written. Repair the store first ('sessionctl check' names what is wrong): restore a backup "
      + "(`sessionctl restore FILE`), or rescue what is left with the sqlite3 shell's `.recover`"
    let failed: [CheckResult]
    do {
      failed = try backend.check().filter { $0.verdict == .failed }
    } catch var error as SessionStorageError {
      error.message = "the store cannot be read, so nothing was written: \(error.message)"
      error.path = path
      return error
    } catch {
      return copyFailure
    }
    guard !failed.isEmpty else { return copyFailure }
    let corrupt = failed.contains { $0.check == .integrity }
    return SessionStorageError(
      corrupt ? .corrupt : .invalidBackup,
      "the store \(corrupt ? "is corrupt, so its copy is too" : "fails its check, so its copy does too") "
        + "(\(Self.list(failed)))\(repair)",
      path: path)
  }

  /// How a file's pages are laid out, which a restore copies as they are: its page size and
  /// its text encoding must be the store's.
  private struct Layout {
    var pageSize: Int64
    /// `UTF-8`, `UTF-16le` or `UTF-16be`.
    var encoding: String
    /// The schema version, for the command that converts a copy.
    var userVersion: Int64

    init(_ connection: Connection) throws {
      pageSize = try connection.scalarInt("PRAGMA page_size") ?? 0
      encoding = try connection.scalarText("PRAGMA encoding") ?? "?"
      userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
    }
  }

  /// What a backup holds, in brief: enough to tell that it changed since it was verified.
  private struct Summary: Equatable {
    var head: Cursor
    var entries: Int
    /// The newest change ever recorded, with its time (`session_feed_tip`).
    var tip: String?

    var counts: (head: Cursor, entries: Int) { (head, entries) }
  }

  /// The summary of `log`'s file, read in one transaction.
  private static func summary(of log: SessionLog) throws -> Summary {
    try log.reader.withLock { connection in
      try connection.transaction(.deferred) { try summary(on: connection) }
    }
  }

  private static func summary(on connection: Connection) throws -> Summary {
    Summary(
      head: try SessionTables.bounds(on: connection).head,
      entries: Int(try connection.scalarInt("SELECT count(*) FROM session_changes") ?? 0),
      tip: try connection.scalarText(SessionTables.tipSQL))
  }
}

/// The store's files — the database, its `-wal`, `-shm` and `-journal` — by where their
/// names lead: `backup` and `restore` refuse a path that is one of them, or whose own
/// companion would be, since touching any of them outside SQLite loses commits or locks.
struct StoreFiles {
  /// The suffixes of a database's files, the file itself first.
  static let suffixes = ["", "-wal", "-shm", "-journal"]

  /// Where a name leads: the file (device and inode, symbolic links followed: a hard link
  /// or a symbolic link leads to the same), and the directory entry it ends at, which also
  /// names a file that does not exist yet, such as the `-journal`. Opens nothing.
  struct Place: Equatable {
    /// The directory entry the name ends at.
    struct Entry: Equatable {
      var directory: FileSystem.Identity
      var name: String
    }

    /// The file, when it exists.
    var file: FileSystem.Identity?
    /// The entry, when its directory exists.
    var entry: Entry?

    init(_ path: String) {
      var current = path
      // The kernel gives up after 40 links (ELOOP); so does this.
      for _ in 0..<40 {
        guard (try? FileStatus(current, followingLinks: false))?.kind == .symbolicLink,
          let target = try? FileManager.default.destinationOfSymbolicLink(atPath: current)
        else { break }
        current = target.hasPrefix("/") ? target : FileSystem.parent(of: current) + "/" + target
      }
      file = FileSystem.identity(of: path)
      entry = FileSystem.identity(of: FileSystem.parent(of: current)).map {
        Entry(directory: $0, name: URL(fileURLWithPath: current).lastPathComponent)
      }
    }

    /// Whether both names lead to one file, or end at one directory entry.
    func isSame(as other: Place) -> Bool {
      (file != nil && file == other.file) || (entry != nil && entry == other.entry)
    }
  }

  /// The store's names, with their suffixes and where they lead.
  private let names: [(suffix: String, path: String, place: Place)]

  /// The files of the store at `store`.
  init(of store: String) {
    names = Self.suffixes.map { ($0, store + $0, Place(store + $0)) }
  }

  /// Throws `storeFile` when `path`, or one of the companion names SQLite would give it,
  /// is one of the store's files; the message names the file, says why it must not be used
  /// and ends with `consequence`.
  func refuse(_ path: String, _ consequence: String) throws {
    for suffix in Self.suffixes {
      let place = Place(path + suffix)
      guard let store = names.first(where: { place.isSame(as: $0.place) }) else { continue }
      let what = store.suffix.isEmpty ? "the store itself" : "the store's \(store.suffix) file"
      let role = store.suffix.isEmpty ? "" : ": " + Self.role(of: store.suffix)
      let reason: String
      if !suffix.isEmpty {
        reason = "SQLite would take \(path + suffix), which is \(what), for this file's \(suffix) file\(role)"
      } else if (try? FileStatus(path, followingLinks: false))?.kind == .symbolicLink {
        reason = "it is a symbolic link to \(store.path), \(what)\(role)"
      } else if place.entry != store.place.entry {
        reason = "it is a hard link to \(store.path), \(what)\(role)"
      } else {
        reason = "it is \(what)\(role)"
      }
      throw SessionStorageError(.storeFile, "\(reason); \(consequence)", path: path)
    }
  }

  /// What SQLite keeps in the companion file with `suffix`.
  private static func role(of suffix: String) -> String {
    switch suffix {
    case "-wal":
      "its write-ahead log, which holds commits not yet in the database file while the store is open"
    case "-shm": "the index through which every process that has the store open takes its locks"
    default: "the name of its rollback journal, which SQLite would roll back into the store"
    }
  }
}
