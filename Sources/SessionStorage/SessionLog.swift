import FeedKit
import Foundation
import Synchronization

/// The `session_changes` table as a ``FeedSource``, read through one connection.
final class SessionLog: FeedSource {
  let reader: Mutex<Connection>
  /// The file it reads, and whether its path still names it.
  let file: OpenedFile
  /// Why reads are refused, for a file opened read-only although its schema was changed
  /// by hand: ``SessionStore/check()`` can still report it, nothing else reads it.
  let refusal: SessionStorageError?

  init(reader: sending Connection, file: OpenedFile, refusal: SessionStorageError? = nil) {
    self.reader = Mutex(reader)
    self.file = file
    self.refusal = refusal
  }

  private func readable() throws {
    if let refusal { throw refusal }
  }

  func entries(after cursor: Cursor, limit: Int) throws -> [SessionEntry] {
    try readable()
    if let reason = file.replacement {
      throw FeedError.historyRewritten(cursor: cursor, reason: reason)
    }
    return try reader.withLock { connection in
      try connection.query(
        SessionTables.pageSQL,
        [.integer(cursor.value), .integer(Int64(limit))]
      ) { statement in
        var entries: [SessionEntry] = []
        while try statement.step() { entries.append(SessionTables.entry(statement)) }
        return entries
      }
    }
  }

  func bounds() throws -> FeedBounds {
    try readable()
    return try reader.withLock { try SessionTables.bounds(on: $0) }
  }

  func snapshot() throws -> (state: SessionState, cursor: Cursor) {
    try readable()
    try file.requireSameFile()
    return try reader.withLock { connection in
      try connection.transaction(.deferred) {
        (try SessionTables.state(on: connection), try SessionTables.bounds(on: connection).head)
      }
    }
  }

  /// `PRAGMA data_version` of the reader: it moves with every commit of another connection.
  func dataVersion() throws -> Int64 {
    try reader.withLock { try $0.scalarInt("PRAGMA data_version") ?? 0 }
  }

  /// The current state.
  func state() throws -> SessionState {
    try readable()
    return try reader.withLock { try SessionTables.state(on: $0) }
  }
}
