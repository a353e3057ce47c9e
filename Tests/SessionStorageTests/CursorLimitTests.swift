import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Cursors come from the file, and the sqlite3 shell can store any Int64 there: a row at
/// either end of the range is served or refused with a clear error, never a trap.
@Suite(.timeLimit(.minutes(10))) struct CursorLimitTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// A store with changes 1 (alice logs in) and 2 (she logs out), then a row at `seq`
  /// inserted by the sqlite3 shell.
  func makeStore(seq: Int64) async throws -> SessionStore {
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    try await store.logOut()
    try await ProcessRunner.sqlite3(path, Self.insert(seq))
    return store
  }

  static func insert(_ seq: Int64) -> String {
    "INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, "
      + "new_is_logged_in, old_updated_at) VALUES (\(seq), '2030-01-01T00:00:00.000Z', 'external', "
      + "'alice', 'mallory', 0, 0, '2030-01-01T00:00:00.000Z')"
  }

  @Test(arguments: [Int64.max, Int64.max - 1])
  func readsServeACursorNearTheLargestIntegerAndRefuseTheGapBeforeIt(_ seq: Int64) async throws {
    let store = try await makeStore(seq: seq)
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(1), head: Cursor(seq)))
    #expect(try store.history(from: .after(Cursor(seq))).isEmpty)
    #expect(try store.history(from: .after(Cursor(seq - 1))).map(\.cursor.value) == [seq])
    // Cursors 3 up to the row are missing: every read across them fails, none skips them.
    #expect(throws: FeedError.self) { try store.history() }
    #expect(throws: FeedError.self) { try store.history(from: .after(Cursor(2))) }
    // A page at a time, the way sessionctl reads it: 1 and 2, then the gap.
    var cursors: [Int64] = []
    var start = FeedStart.beginning
    let ending = #expect(throws: FeedError.self) {
      while let last = try store.history(from: start, limit: 1).last {
        cursors.append(last.cursor.value)
        start = .after(last.cursor)
      }
    }
    #expect(cursors == [1, 2])
    guard case .historyRewritten(let cursor, let reason) = ending else {
      Issue.record("ended with \(String(describing: ending))")
      return
    }
    #expect(cursor == Cursor(2))
    #expect(reason.contains("missing between 2 and \(seq)"))
    await #expect(throws: FeedError.self) { try await first(3, of: store.changes(from: .beginning)) }
    #expect(try store.snapshotAndChanges().cursor == Cursor(seq))
    #expect(try store.check().count >= 5)
  }

  @Test func theSmallestIntegerIsRefusedForTheBeginningAndServedAfterACursor() async throws {
    let store = try await makeStore(seq: .min)
    #expect(throws: FeedError.noCursorBefore(Cursor(.min))) { try store.history() }
    #expect(try store.history(from: .after(.zero)).map(\.cursor.value) == [1, 2])
    #expect(try store.snapshotAndChanges().cursor == Cursor(2))
    let cursors = try #require(try store.check().first { $0.check == .cursors })
    #expect(cursors.verdict == .failed)
    #expect(cursors.detail.contains("below 1"))
    #expect(try await store.logIn(as: "bob")?.cursor == Cursor(3))
  }

  @Test(arguments: [Int64.max, Int64.max - 1, Int64.min])
  func checkAndCompactionNeverTrap(_ seq: Int64) async throws {
    let store = try await makeStore(seq: seq)
    let items = try store.check()
    #expect(try #require(items.first { $0.check == .continuity }).verdict == .failed)
    #expect((try #require(items.first { $0.check == .cursors }).verdict == .passed) == (seq == .max - 1))
    #expect(try store.compact(before: Cursor(2)).removed == (seq == .min ? 2 : 1))
    let kept = try store.compact(keepingLast: 1)
    #expect(kept.bounds.oldest == Cursor(max(seq, 2)))
  }

  @Test func aWriteAtTheLargestCursorSaysWhatIsWrong() async throws {
    let store = try await makeStore(seq: .max - 1)
    #expect(try await store.logIn(as: "bob")?.cursor == Cursor(.max))
    let error = try #require(throws: SessionStorageError.self) { try store.blocking.logOut() }
    #expect(error.code == .cursorsExhausted)
    #expect(error.message.contains("reached the largest integer"))
    #expect(error.message.contains("inserted by hand"))
    #expect(error.description.contains(path))
    #expect(try store.state.isLoggedIn)
    let cursors = try #require(try store.check().first { $0.check == .cursors })
    #expect(cursors.verdict == .failed)
    #expect(cursors.detail.contains("largest integer"))
  }
}
