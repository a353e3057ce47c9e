import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Every entry and state read holds the values of its own row's bytes, and the bounds kept
/// from an earlier read (``SessionLog/bounds()``) are the ones the file holds.
@Suite(.timeLimit(.minutes(10))) struct ReadPathTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore
  /// Another connection on the file, standing in for the sqlite3 shell.
  let shell: Connection

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
    shell = try Connection(path: path, mode: .readWrite)
  }

  /// One row of `session_changes` decoded column by column, with nothing reused.
  struct Row: Equatable {
    var cursor: Int64
    var at: Date
    var origin: [UInt8]
    var oldUsername: [UInt8]?
    var newUsername: [UInt8]?
    var oldUpdatedAt: Date
    var oldIsLoggedIn: Bool
    var newIsLoggedIn: Bool

    init(_ entry: SessionEntry) {
      cursor = entry.cursor.value
      at = entry.time
      origin = Array(entry.origin.utf8)
      oldUsername = entry.before.username.map { Array($0.utf8) }
      newUsername = entry.after.username.map { Array($0.utf8) }
      oldUpdatedAt = entry.before.updatedAt
      oldIsLoggedIn = entry.before.isLoggedIn
      newIsLoggedIn = entry.after.isLoggedIn
    }

    init(_ statement: Statement) {
      func time(_ index: Int32) -> Date {
        statement.lossyText(at: index).flatMap(Timestamp.parse) ?? Date(timeIntervalSince1970: 0)
      }
      cursor = statement.int64(at: 0)
      at = time(1)
      origin = Array((statement.lossyText(at: 2) ?? "external").utf8)
      oldUsername = statement.lossyText(at: 3).map { Array($0.utf8) }
      newUsername = statement.lossyText(at: 4).map { Array($0.utf8) }
      oldUpdatedAt = time(7)
      oldIsLoggedIn = statement.int64(at: 5) != 0
      newIsLoggedIn = statement.int64(at: 6) != 0
    }
  }

  @Test func everyEntryHoldsTheValuesOfItsOwnBytes() throws {
    try store.blocking.logIn(as: "alice")
    try store.blocking.logOut()
    try store.blocking.logIn(as: "Jos\u{E9}")
    // Values that repeat the row before in Swift's eyes but not in bytes, invalid UTF-8
    // and the text it is repaired to, times in the short form, typed by hand, or all NULs.
    let rows = [
      "('2026-11-29T20:14:35.689Z', 'test', 'Jos' || char(233), 'Jose' || char(769), 1, 1, "
        + "'2026-11-29T20:14:35.689Z')",
      "('2026-11-29T20:14:35.689Z', CAST(X'41FF42' AS TEXT), CAST(X'41FF42' AS TEXT), CAST(X'41FF42' AS TEXT), "
        + "0, 1, 'not a time')",
      "('not a time', 'A' || char(65533) || 'B', 'A' || char(65533) || 'B', 'x', 1, 0, 'not a time')",
      "('2026-11-29T20:14:35Z', 'test', NULL, '', 0, 0, '2026-11-29T20:14:35Z')",
      "(CAST(zeroblob(24) AS TEXT), 'test', '', NULL, 0, 1, '2026-11-29T20:14:35.689Z')",
      "('2026-11-29T20:14:35.689Z', 'test', NULL, NULL, 1, 0, CAST(zeroblob(24) AS TEXT))",
      "('2026-11-29T20:14:35.690Z', 'test2', NULL, 'bob', 0, 1, '2026-11-29T20:14:35.689Z')",
    ]
    for row in rows {
      try shell.run(
        "INSERT INTO session_changes (at, origin, old_username, new_username, old_is_logged_in, "
          + "new_is_logged_in, old_updated_at) VALUES \(row)")
    }
    let expected = try shell.query("SELECT \(SessionTables.changeColumns) FROM session_changes ORDER BY seq")
    {
      statement in
      var rows: [Row] = []
      while try statement.step() { rows.append(Row(statement)) }
      return rows
    }
    #expect(expected.count == 10)
    #expect(try store.history(limit: 100).map(Row.init) == expected)
    // One at a time, as a subscriber pages: the values kept from the page before.
    var paged: [Row] = []
    var start = FeedStart.beginning
    while let entry = try store.history(from: start, limit: 1).first {
      paged.append(Row(entry))
      start = .after(entry.cursor)
    }
    #expect(paged == expected)
  }

  @Test func theStateIsReadFromItsOwnBytes() throws {
    try store.blocking.logIn(as: "Jos\u{E9}")
    #expect(try store.state.username.map { Array($0.utf8) } == Array("Jos\u{E9}".utf8))
    try shell.run("UPDATE session SET username = 'Jose' || char(769)")
    #expect(try store.state.username.map { Array($0.utf8) } == Array("Jose\u{301}".utf8))
    try shell.run("UPDATE accounts SET updated_at = 'not a time'")
    #expect(try store.state.updatedAt == Date(timeIntervalSince1970: 0))
    try shell.run("UPDATE active_account SET account_id = NULL")  // its trigger sets updated_at too
    try shell.run("UPDATE active_account SET updated_at = '2026-11-29T20:14:35.689Z'")
    let state = try store.state
    #expect(state.username == nil)
    #expect(state.updatedAt == Timestamp.parse("2026-11-29T20:14:35.689Z"))
  }

  @Test func boundsFollowEveryCommitOfAnotherConnection() throws {
    try store.blocking.logIn(as: "alice")
    try store.blocking.logOut()
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(1), head: Cursor(2)))
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(1), head: Cursor(2)))
    try store.blocking.logIn(as: "bob")  // the store's writer is another connection than its reader
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(1), head: Cursor(3)))
    try shell.run("DELETE FROM session_changes WHERE seq = 1")
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(2), head: Cursor(3)))
    try shell.run("UPDATE sqlite_sequence SET seq = 7 WHERE name = 'session_changes'")
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(2), head: Cursor(7)))
    #expect(try store.history(from: .after(Cursor(6))).isEmpty)
  }
}
