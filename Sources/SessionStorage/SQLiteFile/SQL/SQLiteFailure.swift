import CSQLite
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

/// SQLite result codes as ``SessionStorageError``s that say what failed, why and what to do,
/// SQLite's own message last (`(SQLite: …)`): its bare "unable to open database file" names
/// neither the file nor the reason.
enum SQLiteFailure {
  static func error(_ rc: Int32, db: OpaquePointer?, path: String?, sql: String?) -> SessionStorageError {
    let sqliteMessage =
      db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
    // The system's errno is SQLite's last one: it belongs to this failure only for the codes
    // that come from a system call.
    let primary = rc & 0xff
    let fromSystemCall = [SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_FULL, SQLITE_READONLY].contains(primary)
    let systemError = fromSystemCall ? db.map { sqlite3_system_errno($0) } ?? 0 : 0
    let (code, sentence) = explain(rc, systemError: systemError, path: path)
    return SessionStorageError(
      code, sentence + " (SQLite: \(sqliteMessage))", path: path, resultCode: rc, sql: sql)
  }

  /// The code and the sentence for `rc`.
  static func explain(_ rc: Int32, systemError: Int32, path: String?) -> (SessionStorageError.Code, String) {
    let primary = rc & 0xff
    let system = systemError == 0 ? nil : Errno(rawValue: systemError)
    let because = system.map { " (\($0))" } ?? ""
    let checkDisk =
      "check the disk and its file system (free space, `dmesg`), then check the store (`sessionctl check`)"
    // SQLite falls back to reading (a -shm it cannot open for writing) and then says "readonly".
    if [SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_READONLY].contains(primary), let path,
      let companion = oddCompanion(of: path)
    {
      return (code(for: primary), companion)
    }
    if primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR {
      // "unable to open database file" hides a descriptor limit: name it, and how to raise it.
      if systemError == EMFILE || systemError == ENFILE {
        return (code(for: primary), SystemLimits.explain(systemError, call: "open"))
      }
      if SessionStorageError.Code.forSystemError(systemError, writing: true) == .full {
        return (.full, "the disk is full\(because): free space, then try again")
      }
    }
    switch primary {
    case SQLITE_CANTOPEN:
      return (.notFound, cannotOpen(systemError, because: because, path: path))
    case SQLITE_IOERR:
      return (.sqlite, "\(failedOperation(rc))\(because); \(checkDisk)")
    case SQLITE_READONLY:
      return (.readOnly, readOnly(rc, because: because))
    case SQLITE_PERM:
      return (
        .readOnly,
        "the file may not be written (access denied)\(because); open the store read-only to read it"
      )
    case SQLITE_FULL:
      return (
        .full,
        "the database is full: the disk has no room left, or the file reached its page limit; "
          + "free space, then try again"
      )
    case SQLITE_CORRUPT:
      return (
        .corrupt,
        "the database file is corrupt; restore a backup (`sessionctl restore FILE`), or rescue what is left "
          + "with the sqlite3 shell's `.recover`"
      )
    case SQLITE_NOTADB:
      return (.notADatabase, "not a SQLite database (or an encrypted one)")
    case SQLITE_BUSY:
      return (
        .busy,
        "the database stayed locked by another connection (another process, the sqlite3 shell) for longer "
          + "than the busy timeout; nothing was written: try again"
      )
    case SQLITE_LOCKED:
      return (.busy, "a table is locked by another statement of this process; try again")
    case SQLITE_NOMEM:
      return (
        .sqlite, "out of memory; close other programs or raise this process's memory limit, then try again"
      )
    case SQLITE_PROTOCOL:
      return (.sqlite, "another process kept changing SQLite's WAL locks (a misbehaving client?); try again")
    case SQLITE_CONSTRAINT:
      return (.sqlite, "the schema refused the change (a constraint failed); nothing was written")
    case SQLITE_INTERRUPT:
      return (.sqlite, "the statement was interrupted; nothing was written")
    default:
      return (.sqlite, "the database refused the statement")
    }
  }

  /// The code a failure of `primary` maps to when its sentence comes from elsewhere.
  private static func code(for primary: Int32) -> SessionStorageError.Code {
    switch primary {
    case SQLITE_CANTOPEN: .notFound
    case SQLITE_READONLY: .readOnly
    default: .sqlite
    }
  }

  /// A `-wal`, `-shm` or `-journal` beside `path` that is not a regular file (a directory, a
  /// FIFO, a device): SQLite cannot keep its pages there, and says only "unable to open" or
  /// "disk I/O error". `lstat` opens nothing, so this is safe while the store is open.
  static func oddCompanion(of path: String) -> String? {
    for suffix in ["-wal", "-shm", "-journal"] {
      guard let status = try? FileStatus(path + suffix, followingLinks: false) else { continue }
      let kind: String? =
        switch status.kind {
        case .regular: nil
        case .directory: "a directory"
        case .fifo: "a FIFO (named pipe)"
        case .symbolicLink: "a symbolic link"
        case .socket: "a socket"
        case .characterDevice, .blockDevice: "a device"
        case .unknown: "not a regular file"
        }
      guard let kind else { continue }
      return "its \(suffix) file \(path)\(suffix) is \(kind), not a regular file: SQLite keeps the store's "
        + "\(suffix == "-shm" ? "shared index" : "changes") there; move it away (it is not SQLite's), then try again"
    }
    return nil
  }

  /// Why SQLite could not open the file or one of its companions, by the system's error.
  private static func cannotOpen(_ systemError: Int32, because: String, path: String?) -> String {
    switch systemError {
    case ENOENT:
      return
        "cannot open the file or its -wal/-shm: the file or its directory does not exist (any more)\(because); "
        + "open the store where the file is"
    case EACCES, EPERM:
      return "permission denied: this user (uid \(getuid())) may not open "
        + (path.flatMap(unopenable) ?? "the file or its -wal/-shm")
        + "; give this user access to it, or use the owner's account"
    case ENOTDIR:
      return "cannot open the file: a part of its path is not a directory\(because)"
    case ELOOP:
      return "cannot open the file: its path has too many symbolic links (a loop?)\(because)"
    case EROFS:
      return
        "cannot open the file for writing: the file system is read-only\(because); open the store read-only"
    case ENAMETOOLONG:
      return "cannot open the file: its path is too long\(because); use a shorter one"
    default:
      return "cannot open the file or its -wal/-shm\(because)"
    }
  }

  /// The first of the file, its `-wal` and its `-shm` that this user cannot read and write,
  /// with its owner and mode (`access` and `stat` open nothing).
  private static func unopenable(_ path: String) -> String? {
    for candidate in [path, path + "-wal", path + "-shm"] {
      guard let status = try? FileStatus(candidate), access(candidate, R_OK | W_OK) != 0 else { continue }
      return "\(candidate) (owner uid \(status.owner), mode 0\(String(status.permissions & 0o777, radix: 8)))"
    }
    return nil
  }

  /// What a `SQLITE_IOERR_*` code was doing, e.g. "syncing the file to disk failed".
  private static func failedOperation(_ rc: Int32) -> String {
    switch rc >> 8 {
    case 1, 2: "reading the file failed"
    case 3: "writing the file failed"
    case 4: "syncing the file to disk (fsync) failed"
    case 5: "syncing its directory to disk failed"
    case 6: "truncating the file failed"
    case 7: "inspecting the file (fstat) failed"
    case 8, 9, 14, 15: "locking the file failed"
    case 10, 23: "deleting the -wal or -journal failed"
    case 12: "out of memory while reading or writing the file"
    case 13: "checking for the -wal or -journal failed"
    case 16: "closing the file failed"
    case 18: "opening the -shm file failed"
    case 19: "growing the -shm file failed"
    case 20, 21: "mapping the -shm file into memory failed"
    case 22: "seeking in the file failed"
    case 24: "mapping the file into memory failed"
    case 32: "a page's checksum is wrong"
    case 33: "the file system reported corruption"
    default: "an I/O operation on the file failed"
    }
  }

  /// The sentence of a `SQLITE_READONLY_*` code.
  private static func readOnly(_ rc: Int32, because: String) -> String {
    switch rc >> 8 {
    case 1:
      "the -wal holds commits a crash left, and recovering them needs a writable open; open the store "
        + "for writing once (`sessionctl migrate`)"
    case 2:
      "a read-only open cannot lock the -shm file\(because); open the store for writing, or let this user "
        + "write the -shm"
    case 3:
      "a -journal left by a crash must be rolled back, which needs a writable open; open the store for "
        + "writing once (`sessionctl migrate`)"
    case 4:
      "the file was moved or deleted while the store had it open; nothing was written: open the store again"
    case 5:
      "the -shm cannot be set up by a read-only open\(because); open the store for writing once"
    case 6:
      "the directory cannot be written, so SQLite cannot create the -wal and -shm beside the file; "
        + "let this user write the directory, or open the store read-only"
    default:
      "the file cannot be written: it is open read-only, or this user may not write it or its -wal/-shm"
        + "\(because); open the store read-only to read it, or give this user write access"
    }
  }
}
