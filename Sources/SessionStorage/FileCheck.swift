import CSQLite
import Foundation
internal import SystemKit

/// Looks at a path before it is used as a store, so that a file which is not a session
/// store is refused without a byte written.
///
/// It never opens the database with a descriptor of its own: on POSIX, closing *any*
/// descriptor of a file drops every advisory lock the process holds on it, including
/// SQLite's, and another process would then delete the WAL our connections still write
/// into. `stat` opens nothing; the header is read through a SQLite connection, whose
/// close SQLite defers while other connections of the process hold locks.
enum FileCheck {
  /// A file's identity: the same file whatever path, link or relative spelling names it.
  struct Identity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
  }

  /// Resolves a symbolic link to the file it names, so that SQLite's `-wal` and `-shm` and
  /// the watcher's directory are the target's. A dangling link is refused: creating its
  /// target somewhere unexpected is worse than an error.
  static func resolve(_ path: String) throws -> String {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return path }
    guard let resolved = realpath(path, nil) else {
      throw SessionStorageError(
        .notFound, "this is a symbolic link to a missing file; create the target or remove the link",
        path: path)
    }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// The file's identity, from `stat` alone. Nil for a missing file that may be created;
  /// throws for a missing file that may not, a directory, anything but a regular file, and
  /// an empty file.
  static func identify(_ path: String, mayCreate: Bool) throws -> Identity? {
    var info = stat()
    // withCString lends the string's own bytes; passing `path` itself would copy them into a
    // temporary array first (every write checks the path).
    guard path.withCString({ stat($0, &info) }) == 0 else {
      let err = errno
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
      throw SessionStorageError(
        .sqlite, "cannot inspect the file: \(Errno(rawValue: err))", path: path)
    }
    if (info.st_mode & S_IFMT) == S_IFDIR {
      throw SessionStorageError(.notADatabase, "this is a directory, not a database file", path: path)
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
      throw SessionStorageError(.notADatabase, "this is not a regular file", path: path)
    }
    if info.st_size == 0 {
      throw SessionStorageError(
        .notADatabase, "the file is empty (0 bytes); remove it or choose another path", path: path)
    }
    return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
  }

  /// The directory holding `path`, absolute (a relative path is taken from the current
  /// directory). Not `NSString.deletingLastPathComponent`: it traps on a one-character name.
  private static func parent(of path: String) -> String {
    URL(fileURLWithPath: path).deletingLastPathComponent().path
  }

  /// Throws when the directory a new file would go into is missing: the store creates
  /// files, not directories (unless ``SessionStore/Options/createsMissingDirectories`` asked).
  static func requireDirectory(of path: String) throws {
    let directory = parent(of: path)
    var info = stat()
    guard !directory.isEmpty, stat(directory, &info) != 0, errno == ENOENT else { return }
    throw SessionStorageError(
      .notFound,
      "the directory \(directory) does not exist (a store creates its file, not directories)",
      path: path)
  }

  /// The longest path SQLite opens a database by: its file system's `mxPathname` less the
  /// 8 bytes it keeps for the `-journal` name (504 on Linux). SQLite measures the path as it
  /// resolves it: absolute, with every symbolic link followed.
  static let longestPath = Int(sqlite3_vfs_find(nil)?.pointee.mxPathname ?? 512) - 8

  /// Throws `pathTooLong` when SQLite could not open `path` (also after `reserving` more
  /// bytes, for a name built from it), instead of its bare "unable to open database file".
  static func requireOpenablePath(_ path: String, reserving extra: Int = 0, shown: String? = nil) throws {
    let length = resolvedForSQLite(path).utf8.count
    guard length + extra > longestPath else { return }
    let limit =
      extra > 0
      ? "at most \(longestPath - extra) for a new store, which is built under a name \(extra) bytes longer first"
      : "SQLite opens at most \(longestPath)"
    throw SessionStorageError(
      .pathTooLong,
      "the path is too long for SQLite: \(length) bytes made absolute (with symbolic links followed), \(limit); "
        + "use a path in a directory whose full path is shorter (a symbolic link to it does not help: "
        + "SQLite follows links)",
      path: shown ?? path)
  }

  /// `path` as SQLite measures it: absolute, with symbolic links resolved as far as the path
  /// exists (the rest, such as a file to be created, appended as given).
  static func resolvedForSQLite(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    var head = absolute
    var tail: [Substring] = []
    while !head.isEmpty {
      if let resolved = realpath(head, nil) {
        defer { free(resolved) }
        let base = String(cString: resolved)
        return tail.reversed().reduce(base == "/" ? "" : base) { $0 + "/" + $1 }
      }
      guard let slash = head.lastIndex(of: "/") else { break }
      tail.append(head[head.index(after: slash)...])
      head = String(head[..<slash])
    }
    return absolute
  }

  /// Creates the missing directories above `path` with mode 0700 (only its owner may enter).
  static func makeDirectories(above path: String) throws {
    func make(_ directory: String) throws {
      var info = stat()
      guard !directory.isEmpty, stat(directory, &info) != 0 else { return }
      try make(parent(of: directory))
      if mkdir(directory, 0o700) == 0 {
        chmod(directory, 0o700)  // whatever the umask
        return
      }
      let err = errno
      guard err != EEXIST else { return }  // made by someone else meanwhile
      throw SessionStorageError(
        err == EACCES ? .permissionDenied : .sqlite,
        "cannot create the directory \(directory): \(Errno(rawValue: err))", path: path)
    }
    try make(parent(of: path))
  }

  /// Throws for a file that is not a SQLite database or was cut off, reading its header
  /// through `connection` (which has not read the file yet, so SQLite has written nothing).
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
    // counter; a file shorter than that count was cut off.
    func integer(_ offset: Int, _ width: Int) -> Int {
      header[offset..<offset + width].reduce(0) { $0 << 8 | Int($1) }
    }
    let pageSize = integer(16, 2) == 1 ? 65_536 : integer(16, 2)
    let pageCount = integer(28, 4)
    if integer(92, 4) == integer(24, 4), pageCount > 0, size < Int64(pageCount) * Int64(pageSize) {
      throw SessionStorageError(
        .corrupt,
        "the file is truncated: its header counts \(pageCount) pages of \(pageSize) bytes, the file has \(size) bytes",
        path: path)
    }
  }

  /// Why this user cannot use an existing file SQLite failed to open or write, from
  /// `access(2)` (which opens nothing): the file unreadable, the file unwritable (for a
  /// writer), or a directory where SQLite cannot create the `-wal` and `-shm` files.
  /// Nil when none of these holds.
  static func denial(_ path: String, writing: Bool, resultCode: Int32? = nil) -> SessionStorageError? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    let owner =
      "owner uid \(info.st_uid), mode 0\(String(info.st_mode & 0o777, radix: 8)); this user is uid \(getuid())"
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
