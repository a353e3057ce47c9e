import Foundation

/// Looks at a path before SQLite does, so that a file which is not a session store is
/// refused without a byte written.
enum FileCheck {
  /// Throws for a directory, an empty file, a file that is not a SQLite database, or a
  /// missing file that may not be created.
  static func inspect(_ path: String, mayCreate: Bool) throws {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let err = errno
      if err == ENOENT {
        if mayCreate { return }
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
  }
}
