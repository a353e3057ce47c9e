import Foundation

/// Looks at a path before SQLite does, so that a file which is not a session store is
/// refused without a byte written.
enum FileCheck {
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

  /// Throws for a directory, an empty file, a file that is not a SQLite database, or a
  /// missing file that may not be created. Returns whether the file exists.
  @discardableResult
  static func inspect(_ path: String, mayCreate: Bool) throws -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let err = errno
      if err == ENOENT {
        if mayCreate { return false }
        throw SessionStorageError(
          .notFound, "no database here (it is created by the first write)", path: path)
      }
      throw SessionStorageError(
        .sqlite, "cannot inspect the file: \(String(cString: strerror(err)))", path: path)
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
    guard let handle = FileHandle(forReadingAtPath: path) else {
      throw SessionStorageError(.readOnly, "cannot read the file (permission denied)", path: path)
    }
    defer { try? handle.close() }
    let header = (try? handle.read(upToCount: 100)) ?? Data()
    guard header.starts(with: Array("SQLite format 3\0".utf8)) else {
      throw SessionStorageError(.notADatabase, "not a SQLite database (the header is wrong)", path: path)
    }
    guard header.count == 100 else {
      throw SessionStorageError(.corrupt, "the file is truncated (\(info.st_size) bytes)", path: path)
    }
    // The header's page count is valid when its version-valid-for number equals the change
    // counter; a file shorter than that count was cut off.
    func integer(_ offset: Int, _ width: Int) -> Int {
      header[offset..<offset + width].reduce(0) { $0 << 8 | Int($1) }
    }
    let pageSize = integer(16, 2) == 1 ? 65_536 : integer(16, 2)
    let pageCount = integer(28, 4)
    if integer(92, 4) == integer(24, 4), pageCount > 0, Int(info.st_size) < pageCount * pageSize {
      throw SessionStorageError(
        .corrupt,
        "the file is truncated: its header counts \(pageCount) pages of \(pageSize) bytes, the file has \(info.st_size) bytes",
        path: path)
    }
    return true
  }
}
