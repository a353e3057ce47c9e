import FeedKit
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SessionStorage

/// History that changes under a subscriber — a restore of an older backup, a sequence
/// reset by hand, a file replaced — ends it with a typed error instead of skipping or
/// repeating cursors; `values()` takes a new snapshot.
@Suite(.timeLimit(.minutes(10))) struct RewrittenHistoryTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  func rename(_ names: [String]) throws {
    for name in names { try store.blocking.rename(to: name) }
  }

  /// Consumes `count` entries, counting them in `consumed`, then returns how the iterator
  /// ends: its error, or nil (recorded as an issue) when it delivered another entry or ended.
  func next(after count: Int, of changes: SessionSubscription, consumed: Tally) async -> (any Error)? {
    var iterator = changes.makeAsyncIterator()
    do {
      for _ in 0..<count {
        guard try await iterator.next() != nil else { break }
        consumed.advance()
      }
      let extra = try await iterator.next()
      Issue.record("delivered \(extra.map { "cursor \($0.cursor)" } ?? "nothing") instead of failing")
      return nil
    } catch {
      return error
    }
  }

  /// Follows `changes` until it has consumed `count` entries (the history is rewritten only
  /// then), runs `rewrite`, and returns how the subscription ended. The follower is a child
  /// task: the suite's time limit ends it with the test.
  func ending(
    after count: Int, of changes: SessionSubscription, _ rewrite: () async throws -> Void
  ) async throws -> (any Error)? {
    let consumed = Tally()
    async let ending = next(after: count, of: changes, consumed: consumed)
    #expect(await eventually { consumed.value == count }, "the subscriber read \(count) entries")
    try await rewrite()
    return await ending
  }

  @Test func aRestoreOfAnOlderBackupEndsASubscriberThatHadSeenMore() async throws {
    try rename(["a", "b", "c"])
    try await ProcessRunner.sqlite3(path, ".backup '\(dir.file("backup.db"))'")
    try rename(["d", "e", "f", "g", "h"])
    let changes = try store.changes(from: .beginning)
    let end = try await ending(after: 8, of: changes) {
      try await ProcessRunner.sqlite3(path, ".restore '\(dir.file("backup.db"))'")
    }
    let error = try #require(end as? FeedError)
    guard case .historyRewritten(let cursor, let reason) = error else {
      Issue.record("\(error)")
      return
    }
    #expect(cursor == Cursor(8))
    #expect(reason.contains("moved back to 3"))
    #expect(error.description.contains("start again from a snapshot"))
  }

  /// After the restore, writers hand out cursors 4, 5, … again, past the subscriber's:
  /// the entry at its cursor is not the one it saw.
  @Test func cursorsHandedOutAgainAfterARestoreAreNotDelivered() async throws {
    try rename(["a", "b", "c"])
    try await ProcessRunner.sqlite3(path, ".backup '\(dir.file("backup.db"))'")
    try rename(["d", "e"])
    let changes = try store.changes(from: .beginning)
    var iterator = changes.makeAsyncIterator()
    for _ in 0..<5 { _ = try await iterator.next() }
    try await ProcessRunner.sqlite3(path, ".restore '\(dir.file("backup.db"))'")
    try rename(["x", "y", "z"])  // cursors 4, 5 and 6 again, other changes
    do {
      let entry = try await iterator.next()
      Issue.record("delivered cursor \(entry.map { "\($0.cursor)" } ?? "none") of a rewritten history")
    } catch let error as FeedError {
      guard case .historyRewritten(let cursor, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(cursor == Cursor(5))
      #expect(reason.contains("not the one delivered"))
    }
  }

  /// `compact --keep 0` then a hand-made `sqlite_sequence` reset: cursors restart at 1.
  @Test func aSequenceResetAfterCompactionEndsASubscriber() async throws {
    try rename(["a", "b", "c", "d", "e"])
    let changes = try store.changes(from: .beginning)
    let end = try await ending(after: 5, of: changes) {
      _ = try store.compact(keepingLast: 0)
      try await ProcessRunner.sqlite3(
        path, "UPDATE sqlite_sequence SET seq = 0 WHERE name = 'session_changes'")
      try rename(["f"])
    }
    let error = try #require(end as? FeedError)
    guard case .historyRewritten(_, let reason) = error else {
      Issue.record("\(error)")
      return
    }
    #expect(reason.contains("moved back to"))
  }

  @Test func valuesTakeANewSnapshotAfterARestore() async throws {
    try await store.logIn(as: "old")
    try await ProcessRunner.sqlite3(path, ".backup '\(dir.file("backup.db"))'")
    try rename(["new1", "new2"])
    let values = store.values()
    let seen = Mutex<[String?]>([])
    async let following: Void = {
      for try await value in values {
        seen.withLock { $0.append(value.username) }
        if value.username == "old" { return }
      }
    }()
    #expect(await eventually { seen.withLock { $0 } == ["new2"] })  // the first snapshot
    try await ProcessRunner.sqlite3(path, ".restore '\(dir.file("backup.db"))'")
    try await following
    #expect(seen.withLock { $0 } == ["new2", "old"])
  }

  /// Another file renamed over the store's: subscribers end, and writes are refused
  /// rather than going into a file nobody else sees.
  @Test func aFileReplacedUnderASubscriberEndsItAndRefusesWrites() async throws {
    try rename(["a", "b"])
    let other = dir.file("other.db")
    try await SessionStore(path: other).logIn(as: "elsewhere")
    let changes = try store.changes(from: .beginning)
    let end = try await ending(after: 2, of: changes) { #expect(Glibc.rename(other, path) == 0) }
    let error = try #require(end as? FeedError)
    guard case .historyRewritten(_, let reason) = error else {
      Issue.record("\(error)")
      return
    }
    #expect(reason.contains("replaced"))
    let write = try #require(throws: SessionStorageError.self) { try store.blocking.rename(to: "lost") }
    #expect(write.code == .fileReplaced)
    #expect(write.message.contains("open the store again"))
  }

  /// Someone deletes the `-wal` while the store has it open: later commits would go into
  /// a file no other process sees. Subscribers end, writes are refused.
  @Test func aWALDeletedUnderTheStoreEndsSubscribersAndRefusesWrites() async throws {
    try rename(["a", "b"])
    let changes = try store.changes(from: .beginning)
    let end = try await ending(after: 2, of: changes) { #expect(unlink(path + "-wal") == 0) }
    let error = try #require(end as? FeedError)
    guard case .historyRewritten(_, let reason) = error else {
      Issue.record("\(error)")
      return
    }
    #expect(reason.contains("-wal file beside it was deleted"))
    let write = try #require(throws: SessionStorageError.self) { try store.blocking.rename(to: "lost") }
    #expect(write.code == .fileReplaced)
  }

  /// A consumer saved cursor 5 and its time; meanwhile the file was restored to cursor 3
  /// and grew to 6 again with other changes. Resuming after "5 at its time" fails; after
  /// an entry the backup kept, it resumes.
  @Test func resumingAfterAnEntryThatARestoreReplacedFails() async throws {
    try rename(["a", "b", "c"])
    let kept = try #require(try store.history(from: .beginning, limit: 10).last)
    try await ProcessRunner.sqlite3(path, ".backup '\(dir.file("backup.db"))'")
    try rename(["d", "e"])
    let saved = try #require(try store.history(from: .beginning, limit: 10).last)
    #expect(saved.cursor == Cursor(5))
    try await ProcessRunner.sqlite3(path, ".restore '\(dir.file("backup.db"))'")
    try rename(["x", "y", "z"])
    for attempt in [
      { _ = try store.changes(from: .afterEntry(saved.cursor, time: saved.time)) },
      { _ = try store.history(from: .afterEntry(saved.cursor, time: saved.time)) },
    ] {
      let error = try #require(throws: FeedError.self) { try attempt() }
      guard case .historyRewritten(let cursor, _) = error else {
        Issue.record("\(error)")
        continue
      }
      #expect(cursor == Cursor(5))
    }
    // A saved cursor beyond the head (the log restored and not grown back) is rewritten
    // history too when its time is given; a bare cursor is only "ahead".
    let beyond = Cursor(saved.cursor.value + 10)
    let withTime = try #require(throws: FeedError.self) {
      try store.history(from: .afterEntry(beyond, time: saved.time))
    }
    #expect(withTime == .historyRewritten(cursor: beyond, reason: "the newest cursor is now 6"))
    let bare = try #require(throws: FeedError.self) { try store.history(from: .after(beyond)) }
    #expect(bare == .cursorAhead(requested: beyond, head: Cursor(6)))
    // Without the time, the cursor alone resumes silently: that is what the time is for.
    #expect(try store.history(from: .after(saved.cursor)).map(\.after.username) == ["z"])
    let resumed = try store.history(from: .afterEntry(kept.cursor, time: kept.time))
    #expect(resumed.map(\.after.username) == ["x", "y", "z"])
  }

  /// `check` says when the sequence was reset below the newest cursor ever written.
  @Test func aSequenceResetIsReportedByCheck() async throws {
    try rename(["a", "b"])
    _ = try store.compact(keepingLast: 0)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    try await ProcessRunner.sqlite3(path, "UPDATE sqlite_sequence SET seq = 0 WHERE name = 'session_changes'")
    let continuity = try #require(try store.check().first { $0.check == .continuity })
    #expect(continuity.verdict == .failed)
    #expect(continuity.detail.contains("the newest cursor written was 2 but the head is now 0"))
  }
}
