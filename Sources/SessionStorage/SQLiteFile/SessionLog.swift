import FeedKit
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The `session_changes` table as a ``FeedSource``, read through one connection.
final class SessionLog: FeedSource {
  /// Opened at the first read.
  let reader: LazyConnection
  /// The file it reads, and whether its path still names it.
  let file: OpenedFile
  /// Why reads are refused, for a file opened read-only although its schema was changed
  /// by hand (``SessionStore/check()`` can still report it, nothing else reads it), with
  /// the reader's `PRAGMA data_version` when it was found (nil: not read yet).
  private let refusal: Mutex<Refusal?>

  /// A refusal and the `PRAGMA data_version` it holds for.
  private struct Refusal {
    var error: SessionStorageError
    var dataVersion: Int64?
  }

  init(reader: LazyConnection, file: OpenedFile, refusal: SessionStorageError? = nil) {
    self.reader = reader
    self.file = file
    self.refusal = Mutex(refusal.map { Refusal(error: $0, dataVersion: nil) })
  }

  /// Throws the refusal while it holds. It belongs to the file as it was, not to the
  /// process: once another connection committed (a repair with the sqlite3 shell, a write
  /// of this process's writer, which verified the schema as it opened), the file is
  /// inspected again, and read when it passes.
  private func readable() throws {
    guard let known = refusal.withLock({ $0 }) else { return }
    let found = try reader.withLock { connection -> Refusal? in
      let version = try connection.scalarInt(Self.dataVersionSQL)
      if let version, version == known.dataVersion { return known }
      do {
        _ = try Migrator.inspect(connection)
        return nil
      } catch let error as SessionStorageError where error.code == .tamperedSchema {
        return Refusal(error: error, dataVersion: version)
      }
    }
    refusal.withLock { $0 = found }
    if let found { throw found.error }
  }

  func entries(after cursor: Cursor, limit: Int) throws -> [SessionEntry] {
    try readable()
    if let reason = file.replacement {
      throw FeedError.historyRewritten(cursor: cursor, reason: reason)
    }
    return try reader.withLock { try Self.entries(after: cursor, limit: limit, on: $0) }
  }

  private static func entries(after cursor: Cursor, limit: Int, on connection: Connection) throws
    -> [SessionEntry]
  {
    try connection.query(SessionTables.pageSQL, [.integer(cursor.value), .integer(Int64(limit))]) {
      statement in
      var entries: [SessionEntry] = []
      entries.reserveCapacity(min(limit, 1_000))
      while try statement.step() { entries.append(SessionTables.entry(statement)) }
      return entries
    }
  }

  /// The oldest and newest cursors. Every page of history reads them first; they are read
  /// again only when `PRAGMA data_version` says another connection committed since (a
  /// commit between the two reads moves it too, so the pair is read again next time).
  func bounds() throws -> FeedBounds {
    try readable()
    return try reader.withLock { connection in
      let version = try connection.scalarInt(Self.dataVersionSQL)
      if let version, let known = connection.bounds, known.dataVersion == version { return known.bounds }
      let bounds = try SessionTables.bounds(on: connection)
      connection.bounds = version.map { (dataVersion: $0, bounds: bounds) }
      return bounds
    }
  }

  func snapshot() throws -> (state: SessionState, cursor: Cursor, last: SessionEntry?) {
    try readable()
    try file.requireSameFile()
    return try reader.withLock { connection in
      try connection.transaction(.deferred) {
        let head = try SessionTables.bounds(on: connection).head
        let last = try head.previous.flatMap { before in
          try Self.entries(after: before, limit: 1, on: connection).first { $0.cursor == head }
        }
        return (try SessionTables.state(on: connection), head, last)
      }
    }
  }

  /// The reader's `PRAGMA data_version`, which moves with every commit of another connection
  /// (this process's writer, other processes, the sqlite3 shell, a restore): while it keeps
  /// one value, a page read on the reader returns the same entries. Nil once the file was
  /// found replaced, whose reads fail.
  func readVersion() throws -> Int64? {
    try readable()
    guard file.replacement == nil else { return nil }
    return try dataVersion()
  }

  /// `PRAGMA data_version` of the reader: it moves with every commit of another connection.
  func dataVersion() throws -> Int64 {
    try reader.withLock { try $0.scalarInt(Self.dataVersionSQL) ?? 0 }
  }

  /// Prepared once per connection: the watcher reads it on every file event.
  static let dataVersionSQL = SQL("PRAGMA data_version")

  /// The roster and its cursor, read in one transaction.
  func roster() throws -> SessionRoster {
    try readable()
    try file.requireSameFile()
    return try reader.withLock { connection in
      try connection.transaction(.deferred) { try SessionTables.roster(on: connection) }
    }
  }

  /// The active account's state.
  func state() throws -> SessionState {
    try readable()
    return try reader.withLock { try SessionTables.state(on: $0) }
  }
}
