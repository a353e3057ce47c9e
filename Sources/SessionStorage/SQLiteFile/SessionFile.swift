import FeedKit

extension SessionStore {
  /// The SQLite file this store keeps its session in, with what only a file can do (backup,
  /// restore, a stored retention policy); nil for a store in memory or on a server.
  public var file: SessionFile? {
    (backend as? SQLiteFile).map(SessionFile.init)
  }

  /// ``file``, for code that opened the store on a file.
  /// - Throws: `invalidArgument` for a store in memory or on a server.
  package func requireFile() throws(SessionStorageError) -> SessionFile {
    guard let file else {
      throw SessionStorageError(.invalidArgument, "the store at \(backend.place) is not a SQLite file")
    }
    return file
  }
}

/// The SQLite file of a ``SessionStore`` (``SessionStore/file``), and what only a file can
/// do: copy itself while writers go on, take a backup's content in place, and keep a
/// retention policy that every writer of the file applies.
public struct SessionFile: Sendable {
  /// The file's backend, shared with its store.
  package let backend: SQLiteFile

  /// The database file (a symbolic link is resolved to its target when the store opens).
  public var path: String { backend.path }
  /// The options the store was opened with.
  public var options: SessionStore.FileOptions { backend.options }

  var log: SessionLog { backend.log }
  var database: SharedDatabase { backend.database }
}
