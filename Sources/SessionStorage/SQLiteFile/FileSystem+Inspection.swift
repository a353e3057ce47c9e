import CSQLite
internal import SystemKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// What a database file is, before and after SQLite opens it: a regular file with a
/// SQLite header that is whole, or why this user cannot use it.
extension FileSystem {
  /// The file's identity, from `stat` alone. Nil for a missing file that may be created;
  /// throws for a missing file that may not, a directory, anything but a regular file, and
  /// an empty file.
  static func identify(_ path: String, mayCreate: Bool) throws -> Identity? {
    let status: FileStatus
    do throws(Errno) {
      status = try FileStatus(path)
    } catch {
      let err = error.rawValue
      if err == ENOENT {
        if mayCreate {
          try requireDirectory(of: path)
          return nil
        }
        throw SessionStorageError(
          .notFound, "no database here (it is created by the first write)", path: path)
      }
      if err == ENAMETOOLONG {
        throw SessionStorageError(
          .pathTooLong,
          "the path is too long for the system (\(Errno(rawValue: err))): a name may have at most "
            + "\(NAME_MAX) bytes, a path \(PATH_MAX - 1); use a shorter one", path: path)
      }
      throw SessionStorageError(systemError: err, "cannot inspect the file", writing: false, path: path)
    }
    if status.kind == .directory {
      throw SessionStorageError(.notADatabase, "this is a directory, not a database file", path: path)
    }
    guard status.kind == .regular else {
      throw SessionStorageError(.notADatabase, "this is not a regular file", path: path)
    }
    if status.size == 0 {
      throw SessionStorageError(
        .notADatabase, "the file is empty (0 bytes); remove it or choose another path", path: path)
    }
    return Identity(device: status.device, inode: status.inode)
  }

  /// What is at `path` (symbolic links followed) when it is something other than a regular
  /// file — "a directory", "a FIFO" — or nil for a regular file or nothing.
  static func kindOtherThanRegular(_ path: String) -> String? {
    guard let status = try? FileStatus(path) else { return nil }
    switch status.kind {
    case .regular: return nil
    case .directory: return "a directory"
    case .characterDevice: return "a character device"
    case .blockDevice: return "a block device"
    case .fifo: return "a FIFO"
    case .socket: return "a socket"
    case .symbolicLink, .unknown: return "an unknown kind of file"
    }
  }

  /// Throws for a file that is not a SQLite database or was cut off, reading its header
  /// through `connection` before SQLite has read the file. A file whose header counts more
  /// pages than it holds is then read once through SQLite, as the open's first read would
  /// read it, which accepts it when its WAL holds them (a checkpoint growing the file);
  /// refused, it is reported as truncated.
  static func inspectHeader(through connection: Connection) throws {
    let path = connection.path
    let (header, size) = try connection.rawHeader()
    guard header.starts(with: Array("SQLite format 3\0".utf8)) else {
      throw SessionStorageError(.notADatabase, "not a SQLite database (the header is wrong)", path: path)
    }
    guard size >= 100 else {
      throw SessionStorageError(.corrupt, "the file is truncated (\(size) bytes)", path: path)
    }
    // The header's page count is valid when its version-valid-for number equals the change
    // counter. A file shorter than that count may be cut off, or may be whole: with a WAL,
    // SQLite takes the database's size from the WAL, and a checkpoint that grows the file
    // writes page 1 before the pages it counts. SQLite decides: its first read compares the
    // page count it sees (page 1 from the WAL when there) with the size it sees, and refuses
    // a truncated file as corrupt. Its verdict is worded here, not replaced.
    func integer(_ offset: Int, _ width: Int) -> Int {
      header[offset..<offset + width].reduce(0) { $0 << 8 | Int($1) }
    }
    let pageSize = integer(16, 2) == 1 ? 65_536 : integer(16, 2)
    let pageCount = integer(28, 4)
    guard integer(92, 4) == integer(24, 4), pageCount > 0, size < Int64(pageCount) * Int64(pageSize) else {
      return
    }
    do {
      _ = try connection.scalarInt(pageCountSQL)
    } catch let error as SessionStorageError
      where [SQLITE_CORRUPT, SQLITE_NOTADB].contains((error.resultCode ?? 0) & 0xff)
    {
      throw SessionStorageError(
        .corrupt,
        "the file is truncated: its header counts \(pageCount) pages of \(pageSize) bytes, the file has \(size) bytes",
        path: path, resultCode: error.resultCode)
    }
  }

  /// A read of the database's size, which makes SQLite check the header against it.
  private static let pageCountSQL = SQL("PRAGMA page_count")

  /// Why this user cannot use an existing file SQLite failed to open or write, from
  /// `access(2)` (which opens nothing): the file unreadable, the file unwritable (for a
  /// writer), or a directory where SQLite cannot create the `-wal` and `-shm` files.
  /// Nil when none of these holds.
  static func denial(_ path: String, writing: Bool, resultCode: Int32? = nil) -> SessionStorageError? {
    guard let status = try? FileStatus(path) else { return nil }
    let owner =
      "owner uid \(status.owner), mode 0\(String(status.permissions & 0o777, radix: 8)); this user is uid \(getuid())"
    if access(path, R_OK) != 0 {
      return SessionStorageError(
        .permissionDenied, "permission denied: this user cannot read the file (\(owner))", path: path,
        resultCode: resultCode)
    }
    if writing, access(path, W_OK) != 0 {
      return errno == EROFS
        ? SessionStorageError(
          .readOnly, "the file system is read-only; open the store read-only to read it", path: path,
          resultCode: resultCode)
        : SessionStorageError(
          .permissionDenied,
          "permission denied: this user cannot write the file (\(owner)); open the store read-only to read it",
          path: path, resultCode: resultCode)
    }
    let directory = parent(of: path)
    if access(directory, W_OK) != 0 {
      let reason =
        errno == EROFS
        ? "the file system is read-only"
        : "this user (uid \(getuid())) cannot write the directory \(directory)"
      return SessionStorageError(
        .readOnly,
        "cannot create SQLite's -wal and -shm files beside the database: \(reason)"
          + (writing ? "; open the store read-only to read it" : ""),
        path: path, resultCode: resultCode)
    }
    return nil
  }
}
