import FeedKit
import Foundation
import Synchronization

/// The `session_changes` table as a ``FeedSource``, read through one connection.
final class SessionLog: FeedSource {
  let reader: Mutex<Connection>
  /// The path and the file it named when the store opened.
  private let path: String
  private let identity: FileCheck.Identity
  /// Whether a `-wal` must sit beside the file while it is open (not for an immutable read).
  private let walExpected: Bool
  private let walPath: String
  /// Why the path no longer names that file, once noticed.
  private let replaced = Mutex<String?>(nil)
  /// Why reads are refused, for a file opened read-only although its schema was changed
  /// by hand: ``SessionStore/check()`` can still report it, nothing else reads it.
  let refusal: SessionStorageError?

  init(
    reader: sending Connection, path: String, identity: FileCheck.Identity, walExpected: Bool,
    refusal: SessionStorageError? = nil
  ) {
    self.reader = Mutex(reader)
    self.path = path
    self.identity = identity
    self.walExpected = walExpected
    walPath = path + "-wal"
    self.refusal = refusal
  }

  private func readable() throws {
    if let refusal { throw refusal }
  }

  /// Looks at the path again (`stat`, which opens nothing): true when it just found that
  /// the file was replaced or deleted. From then on every read fails, since this
  /// process's connections still read the old file, which no other process sees.
  func noticeReplacement() -> Bool {
    guard let reason = replacementReason() else { return false }
    return replaced.withLock { replaced in
      defer { replaced = replaced ?? reason }
      return replaced == nil
    }
  }

  /// Throws when the path no longer names the file the store opened.
  func requireSameFile() throws {
    if let reason = replaced.withLock({ $0 }) ?? replacementReason() {
      throw SessionStorageError(.fileReplaced, reason + "; open the store again", path: path)
    }
  }

  private func replacementReason() -> String? {
    // An error here (the path is now a directory, an empty file…) means the same as
    // nothing there: not the file the store opened.
    switch try? FileCheck.identify(path, mayCreate: true) {
    case identity?:
      // SQLite deletes the -wal only when the last connection closes, and ours are open:
      // gone means deleted by hand, and our commits now go where no other process looks.
      walExpected && access(walPath, F_OK) != 0
        ? "the -wal file beside it was deleted while the store had it open" : nil
    case .some: "the file was replaced: another file has its name now"
    case nil: "the file was deleted or cannot be found any more"
    }
  }

  static let stateSQL = "SELECT username, is_logged_in, updated_at FROM session WHERE id = 1"
  static let changeColumns =
    "seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at"
  static let pageSQL = "SELECT \(changeColumns) FROM session_changes WHERE seq > ? ORDER BY seq LIMIT ?"
  static let newestSQL = "SELECT \(changeColumns) FROM session_changes ORDER BY seq DESC LIMIT 1"
  static let boundsSQL = """
    SELECT (SELECT min(seq) FROM session_changes),
      max(coalesce((SELECT max(seq) FROM session_changes), 0),
          coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0))
    """

  func entries(after cursor: Cursor, limit: Int) throws -> [SessionEntry] {
    try readable()
    if let reason = replaced.withLock({ $0 }) {
      throw FeedError.historyRewritten(cursor: cursor, reason: reason)
    }
    return try reader.withLock { connection in
      try connection.query(
        Self.pageSQL,
        [.integer(cursor.value), .integer(Int64(limit))]
      ) { statement in
        var entries: [SessionEntry] = []
        while try statement.step() { entries.append(Self.entry(statement)) }
        return entries
      }
    }
  }

  func bounds() throws -> FeedBounds {
    try readable()
    return try reader.withLock { try Self.bounds(on: $0) }
  }

  func snapshot() throws -> (state: SessionState, cursor: Cursor) {
    try readable()
    try requireSameFile()
    return try reader.withLock { connection in
      try connection.transaction(.deferred) {
        (try Self.state(on: connection), try Self.bounds(on: connection).head)
      }
    }
  }

  /// The newest change ever recorded, as `session_feed_tip` keeps it (compaction never
  /// deletes it): what subscribers were last woken for. Throws once the file was replaced.
  func tip() throws -> String {
    if let reason = replaced.withLock({ $0 }) { throw SessionStorageError(.fileReplaced, reason, path: path) }
    return try reader.withLock { try $0.scalarText(Self.tipSQL) } ?? ""
  }

  static let tipSQL = "SELECT seq || '@' || at FROM session_feed_tip WHERE id = 1"

  /// `PRAGMA data_version` of the reader: it moves with every commit of another connection.
  func dataVersion() throws -> Int64 {
    try reader.withLock { try $0.scalarInt("PRAGMA data_version") ?? 0 }
  }

  /// The current state.
  func state() throws -> SessionState {
    try readable()
    return try reader.withLock { try Self.state(on: $0) }
  }

  static func bounds(on connection: Connection) throws -> FeedBounds {
    try connection.query(boundsSQL) { statement in
      try statement.step()
      return FeedBounds(
        oldest: statement.isNull(at: 0) ? nil : Cursor(statement.int64(at: 0)),
        head: Cursor(statement.int64(at: 1)))
    }
  }

  /// What is wrong when the feed's cursors are at the ends of Int64, which only a hand
  /// edit can reach (the library counts from 1): nil when nothing is.
  ///
  /// At `Int64.max` SQLite cannot number another change and reports `SQLITE_FULL` ("database
  /// or disk is full"); a cursor below 1 cannot be resumed from with a cursor a user can type.
  static func cursorProblem(on connection: Connection) throws -> String? {
    let bounds = try bounds(on: connection)
    if bounds.head.next == nil {
      let row = try connection.scalarInt(
        "SELECT count(*) FROM session_changes WHERE seq = ?",
        [
          .integer(.max)
        ])
      let cause =
        row == 1
        ? "a row with seq \(Int64.max) was inserted by hand"
        : "a row with seq \(Int64.max) was inserted by hand (and deleted since), or sqlite_sequence was set to it"
      return "the feed's cursor reached the largest integer (\(Int64.max)), so SQLite cannot number another "
        + "change (it reports \"database or disk is full\"); the library counts cursors up from 1, so \(cause). "
        + "Delete the rows inserted by hand and set the sequence back to the last cursor the library wrote: "
        + "DELETE FROM session_changes WHERE seq = \(Int64.max); UPDATE sqlite_sequence SET seq = "
        + "(SELECT max(seq) FROM session_changes) WHERE name = 'session_changes'"
    }
    if let oldest = bounds.oldest, oldest.value < 1 {
      return "cursor \(oldest) is below 1, where the library's cursors start: a row was inserted by hand. "
        + "Delete it: DELETE FROM session_changes WHERE seq < 1"
    }
    return nil
  }

  static func state(on connection: Connection) throws -> SessionState {
    try connection.query(stateSQL) { statement in
      guard try statement.step() else {
        throw SessionStorageError(
          .corrupt, "the session row is missing (was the table edited by hand?)", path: connection.path)
      }
      return SessionState(
        username: statement.lossyText(at: 0), isLoggedIn: statement.int64(at: 1) != 0,
        updatedAt: date(statement.lossyText(at: 2)))
    }
  }

  /// The newest entry kept, or nil.
  static func newest(on connection: Connection) throws -> SessionEntry? {
    try connection.query(newestSQL) {
      try $0.step() ? entry($0) : nil
    }
  }

  /// The entry in the current row of a statement selecting ``changeColumns``.
  static func entry(_ statement: Statement) -> SessionEntry {
    let time = date(statement.lossyText(at: 1))
    let before = SessionState(
      username: statement.lossyText(at: 3), isLoggedIn: statement.int64(at: 5) != 0,
      updatedAt: date(statement.lossyText(at: 7)))
    let after = SessionState(
      username: statement.lossyText(at: 4), isLoggedIn: statement.int64(at: 6) != 0, updatedAt: time)
    return SessionEntry(
      cursor: Cursor(statement.int64(at: 0)), time: time, origin: statement.lossyText(at: 2) ?? "external",
      change: SessionChange(before: before, after: after))
  }

  /// A stored time; text not in the feed's format (typed by hand) reads as the epoch and
  /// is reported by `check`.
  static func date(_ text: String?) -> Date {
    text.flatMap(Timestamp.parse) ?? Date(timeIntervalSince1970: 0)
  }
}
