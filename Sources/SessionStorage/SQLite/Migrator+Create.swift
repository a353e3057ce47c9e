import Foundation
internal import SystemKit

extension Migrator {
  /// Creates a new store at `path` atomically: the database is built and migrated in a
  /// private temporary file beside it, then hard-linked into place. No process ever sees a
  /// half-made (empty, unmigrated) file, and when several create the same path at once one
  /// link wins and the others open its result. Returns the migrations applied, or nothing
  /// when another process won.
  static func create(_ path: String, _ durability: SessionStore.Durability) throws -> [Migration] {
    let temporary = path + ".creating-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    // The store is built under the longer name: it must fit too (the message names `path`).
    try FileCheck.requireOpenablePath(path, reserving: temporary.utf8.count - path.utf8.count, shown: path)
    defer { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) } }
    let applied: [Migration]
    do {
      let connection = try Connection(path: temporary, mode: .readWriteCreate)
      try connection.configure(durability)
      applied = try migrate(connection)
      connection.close()  // the last connection: checkpoints and removes the WAL
    } catch var error as SessionStorageError {
      error.path = path
      throw error
    }
    guard link(temporary, path) == 0 else {
      let err = errno
      if err == EEXIST { return [] }
      throw SessionStorageError(
        err == EROFS || err == EACCES || err == EPERM ? .readOnly : .sqlite,
        "cannot create the database file: \(Errno(rawValue: err))", path: path)
    }
    // Make the new directory entry durable too.
    let directory = open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY)
    if directory >= 0 {
      fsync(directory)
      close(directory)
    }
    return applied
  }
}
