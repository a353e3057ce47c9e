import FeedKit
import Foundation
internal import SystemKit

extension SessionStorageError.Code {
  /// The target of ``SessionStore/backup(to:overwrite:)`` exists, and overwriting it was
  /// not asked for (or it is the store's own file, or its `-wal` holds commits). Nothing was
  /// written.
  public static let fileExists = Self(rawValue: "fileExists")
  /// A backup failed its verification: a new copy (nothing is left at the target), or the
  /// file given to ``SessionStore/restore(from:)`` (the store was not changed). The message
  /// names what failed: a verification of ``SessionStore/check()``, a pending migration,
  /// a page size that differs, or the store's own file.
  public static let invalidBackup = Self(rawValue: "invalidBackup")
}

extension SessionStore {
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
  /// its own, and ``check()`` must pass — and only then linked into place (or, with
  /// `overwrite`, renamed over the old file). A failure leaves nothing at `path`, and an
  /// existing file there untouched.
  /// - Throws: ``SessionStorageError``: `fileExists` when `path` exists and `overwrite` is
  ///   false (or `path` is the store's own file, or its `-wal` holds commits: something may
  ///   have it open), `invalidBackup` when the copy failed its check, `readOnly`,
  ///   `notFound` or `sqlite` when the file cannot be created.
  public func backup(to path: String, overwrite: Bool = false) throws -> BackupResult {
    if FileCheck.lexists(path) {
      guard overwrite else {
        throw SessionStorageError(
          .fileExists, "the file exists; nothing was written (overwrite it with --force)", path: path)
      }
      try Self.requireOtherFile(path, than: self.path, "it is the store itself: back it up to another file")
      // A -wal with commits in it would pair with the new file (SQLite finds it by name).
      guard Self.sizeIfPresent(path + "-wal") ?? 0 == 0 else {
        throw SessionStorageError(
          .fileExists,
          "its -wal file holds commits, so something has it open or crashed: stop it (or open the file "
            + "once, to move them in), then try again; nothing was written", path: path)
      }
    }
    let temporary = try Self.makePrivateFile(beside: path)
    defer { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) } }
    do {
      try log.file.requireSameFile()
      try log.reader.withLock { reader in
        let destination = try Connection(path: temporary, mode: .readWrite, busyTimeout: options.busyTimeout)
        defer { destination.close() }
        try destination.copyPages(from: reader)
      }
    } catch var error as SessionStorageError {
      error.path = path
      throw error
    }
    // The verifying store is released (its connections closed) before the file is linked.
    let (head, entries) = try {
      try Self.verifiedBackup(temporary, origin: options.origin, shown: path) { failure in
        "the copy failed its check (\(failure)); nothing was written"
      }.summary
    }().counts
    let bytes = try Self.size(of: temporary)
    if overwrite {
      // An empty -wal and its -shm, left by a reader, belong to the old file.
      for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
    }
    let placed = overwrite ? Foundation.rename(temporary, path) : link(temporary, path)
    guard placed == 0 else {
      let err = errno
      if err == EEXIST {
        throw SessionStorageError(
          .fileExists, "the file exists; nothing was written (overwrite it with --force)", path: path)
      }
      throw SessionStorageError(
        err == EROFS || err == EACCES || err == EPERM ? .readOnly : .sqlite,
        "cannot create the backup file: \(Errno(rawValue: err))", path: path)
    }
    Self.syncDirectory(of: path)
    return BackupResult(path: path, head: head, entries: entries, bytes: bytes)
  }

  /// Replaces the store's content with a backup's, while other processes keep it open.
  ///
  /// The backup is verified first: it must open as a store of this build's schema (not
  /// newer, no pending migration) and pass ``check()``; anything else is refused and the
  /// store is left untouched. The copy then runs SQLite's backup API *into* the store,
  /// through its writer, as one write transaction: every connection, in every process,
  /// sees the old content until the commit and the backup's after it. The file keeps its
  /// inode, its `-wal` and its locks, so nobody has to stop.
  ///
  /// Subscribers whose last entry the restore removed or replaced (an older backup) end
  /// with `FeedError.historyRewritten` instead of skipping or repeating cursors; a restore
  /// that only adds entries after theirs looks to them like new commits.
  /// - Throws: ``SessionStorageError``: `readOnly` for a read-only store; the backup's own
  ///   refusal (`notFound`, `permissionDenied`, `notADatabase`, `foreignDatabase`,
  ///   `newerSchema`, `checksumMismatch`…); `invalidBackup` when it needs migration, fails
  ///   its check, has another page size, or is the store's own file; `busy` when another
  ///   writer held the lock past the busy timeout.
  public func restore(from backupPath: String) throws -> RestoreResult {
    guard !options.readOnly else {
      throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
    }
    guard FileCheck.lexists(backupPath) else {
      throw SessionStorageError(.notFound, "no such file; the store was not changed", path: backupPath)
    }
    try Self.requireOtherFile(
      backupPath, than: path, "it is the store itself; the store was not changed", code: .invalidBackup)
    let backup = try Self.verifiedBackup(backupPath, origin: options.origin, shown: backupPath) { failure in
      "\(failure); the store was not changed"
    }
    let pageSizes = try (
      backup.store.log.reader.withLock { try $0.scalarInt("PRAGMA page_size") },
      log.reader.withLock { try $0.scalarInt("PRAGMA page_size") }
    )
    guard pageSizes.0 == pageSizes.1 else {
      throw SessionStorageError(
        .invalidBackup,
        "its page size (\(pageSizes.0 ?? 0)) differs from the store's (\(pageSizes.1 ?? 0)), which SQLite cannot "
          + "restore into a WAL database; the store was not changed. Stop every process that has the store open, "
          + "then put a copy of the backup in its place and remove the store's -wal and -shm",
        path: backupPath)
    }
    let previousHead = try bounds().head
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
    beacon.signal()  // this process's subscribers read again, and find what changed
    let (head, entries) = try Self.summary(of: log).counts
    return RestoreResult(
      path: path, source: backupPath, previousHead: previousHead, head: head, entries: entries)
  }

  /// Opens `path` read-only as a store of its own and requires ``check()`` to pass; returns
  /// it (for reading) and its head and entry count. A refusal of the open or a failed check
  /// throws with the message `describe` makes of the failure, naming the file `shown`.
  private static func verifiedBackup(
    _ path: String, origin: String, shown: String, _ describe: (String) -> String
  ) throws -> (store: SessionStore, summary: Summary) {
    let store: SessionStore
    do {
      store = try SessionStore(path: path, options: Options(origin: origin, readOnly: true))
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
    let failed = try store.check().filter { $0.verdict == .failed }
    guard failed.isEmpty else {
      let list = failed.map { "\($0.check.rawValue): \($0.detail)" }.joined(separator: "; ")
      throw SessionStorageError(.invalidBackup, describe("failed its check: \(list)"), path: shown)
    }
    return (store, try summary(of: store.log))
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

  /// Throws when `path` names the same file (device and inode) as `store`.
  private static func requireOtherFile(
    _ path: String, than store: String, _ reason: String, code: SessionStorageError.Code = .fileExists
  ) throws {
    var mine = stat()
    var theirs = stat()
    guard stat(path, &theirs) == 0, stat(store, &mine) == 0 else { return }
    if mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino {
      throw SessionStorageError(code, reason, path: path)
    }
  }

  /// Creates a new empty file with mode 0600 and a name of its own beside `path`.
  private static func makePrivateFile(beside path: String) throws -> String {
    let url = URL(fileURLWithPath: path)
    let directory = url.deletingLastPathComponent().path
    var template = Array("\(directory)/.\(url.lastPathComponent).backup-XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1
    }
    guard fd >= 0 else {
      let err = errno
      let code: SessionStorageError.Code =
        switch err {
        case EACCES, EROFS, EPERM: .readOnly
        case ENOENT, ENOTDIR: .notFound
        default: .sqlite
        }
      throw SessionStorageError(
        code, "cannot create the backup file in \(directory): \(Errno(rawValue: err))", path: path)
    }
    fchmod(fd, 0o600)  // mkstemp's 0600 less the umask: 0400 under umask 0277
    close(fd)
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The size of the file at `path`, or nil when there is none.
  private static func sizeIfPresent(_ path: String) -> Int64? {
    var info = stat()
    return lstat(path, &info) == 0 ? Int64(info.st_size) : nil
  }

  private static func size(of path: String) throws -> Int64 {
    var info = stat()
    guard stat(path, &info) == 0 else {
      throw SessionStorageError(
        .sqlite, "cannot read the backup's size: \(Errno(rawValue: errno))", path: path)
    }
    return Int64(info.st_size)
  }

  /// Makes a new directory entry durable.
  private static func syncDirectory(of path: String) {
    let directory = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY)
    if directory >= 0 {
      fsync(directory)
      close(directory)
    }
  }
}

extension FileCheck {
  /// Whether anything (a dangling symbolic link too) is at `path`.
  static func lexists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }
}
