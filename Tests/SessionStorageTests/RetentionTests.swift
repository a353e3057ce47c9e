import FeedKit
import Foundation
import SystemKit
import TestSupport
import Testing

@testable import SessionStorage

/// The retention policy stored in the file: applied by every write in its transaction, by
/// whoever writes; `compact(olderThan:)` on both stores.
@Suite(.timeLimit(.minutes(10))) struct RetentionTests {
  static let torture = ProcessRunner.product("sessiontorture")
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// The kept cursors, read in one statement (a concurrent compaction cannot split it).
  func cursors(_ store: SessionStore) throws -> [Int64] {
    try store.requireFile().backend.log.reader.withLock { connection in
      try connection.query("SELECT seq FROM session_changes ORDER BY seq") { statement in
        var cursors: [Int64] = []
        while try statement.step() { cursors.append(statement.int64(at: 0)) }
        return cursors
      }
    }
  }

  /// Whether SQLite's clock, as `compact(olderThan:)` reads it, shows a later millisecond
  /// than the time recorded for `cursor`.
  func clockHasPassed(_ cursor: Int64, _ store: SessionStore) throws -> Bool {
    try store.requireFile().backend.log.reader.withLock { connection in
      try connection.scalarInt(
        "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') > at FROM session_changes WHERE seq = ?",
        [.integer(cursor)])
        == 1
    }
  }

  func failedChecks(_ store: SessionStore) throws -> [CheckResult] {
    try store.check().filter { $0.verdict != .passed }
  }

  /// Inserts `count` feed rows recorded at `at`, as the sqlite3 shell can.
  func insertOldRows(_ count: Int, at: String = "2020-01-01T00:00:00.000Z") async throws {
    _ = try await ProcessRunner.sqlite3(
      path,
      """
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
      INSERT INTO session_changes (at, origin, old_is_logged_in, new_is_logged_in, old_updated_at)
      SELECT '\(at)', 'external', 0, 0, '\(at)' FROM n
      """)
  }

  @Test func aNewFileHasNoPolicyAndKeepsEverything() throws {
    let store = try SessionStore(path: path)
    #expect(try store.requireFile().retention() == .off)
    for index in 0..<20 { try store.blocking.logIn(as: "u\(index)") }
    #expect(try cursors(store) == Array(1...20))
  }

  @Test func keepLastKeepsExactlyTheNewestEntriesAfterEveryWrite() throws {
    let store = try SessionStore(path: path)
    for index in 0..<5 { try store.blocking.logIn(as: "a\(index)") }
    let applied = try store.requireFile().setRetention(Retention(keepLast: 3))
    #expect(applied.removed == 2)
    #expect(try store.requireFile().retention() == Retention(keepLast: 3))
    #expect(try cursors(store) == [3, 4, 5])
    for index in 0..<10 {
      let entry = try #require(try store.blocking.rename(to: "b\(index)"))
      let head = entry.cursor.value
      #expect(try cursors(store) == [head - 2, head - 1, head])
    }
    #expect(try failedChecks(store) == [])
  }

  @Test func maxAgeDeletesTheOldEntriesOnTheNextWrite() async throws {
    let store = try SessionStore(path: path)
    try await insertOldRows(4)  // before the first write, so that the write's entry is the newest
    try await store.logIn(as: "alice")
    #expect(try cursors(store) == [1, 2, 3, 4, 5])
    #expect(try store.requireFile().setRetention(Retention(maxAge: .seconds(3600))).removed == 4)
    #expect(try cursors(store) == [5])
    try await store.rename(to: "bob")
    try await store.rename(to: "carol")
    #expect(try cursors(store) == [5, 6, 7])
    // A clock stepped back: an old time after a young one. Deleting it would leave a hole
    // in the cursors, so it stays until the entries before it are old too.
    _ = try await ProcessRunner.sqlite3(
      path, "UPDATE session_changes SET at = '2020-01-01T00:00:00.000Z' WHERE seq = 6")
    try await store.rename(to: "dave")
    #expect(try cursors(store) == [5, 6, 7, 8])
    _ = try await ProcessRunner.sqlite3(
      path, "UPDATE session_changes SET at = '2020-01-01T00:00:00.000Z' WHERE seq = 5")
    try await store.rename(to: "erin")
    #expect(try cursors(store) == [7, 8, 9])
    #expect(try failedChecks(store) == [])
  }

  @Test func anEntryOlderThanMaxAgeGoesWithTheNextWrite() async throws {
    let store = try SessionStore(path: path)
    try store.requireFile().setRetention(Retention(keepLast: 100, maxAge: .seconds(1)))
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    try await Task.sleep(for: .milliseconds(1200))
    try await store.rename(to: "carol")
    #expect(try cursors(store) == [3])
  }

  @Test func aPolicyOffKeepsEverythingAgain() throws {
    let store = try SessionStore(path: path)
    try store.requireFile().setRetention(Retention(keepLast: 1))
    try store.requireFile().setRetention(.off)
    for index in 0..<5 { try store.blocking.logIn(as: "u\(index)") }
    #expect(try cursors(store) == [1, 2, 3, 4, 5])
  }

  @Test func policiesThatWouldDeleteTheNewWriteAreRefused() async throws {
    let store = try SessionStore(path: path)
    for policy in [Retention(keepLast: 0), Retention(keepLast: -1), Retention(maxAge: .milliseconds(999))] {
      #expect(throws: SessionStorageError.self) { try store.requireFile().setRetention(policy) }
    }
    #expect(try store.requireFile().retention() == .off)
    // The table refuses them too, for the sqlite3 shell.
    await #expect(throws: SQLite3ShellError.self) {
      try await ProcessRunner.sqlite3(path, "UPDATE session_retention SET keep_last = 0")
    }
    await #expect(throws: SQLite3ShellError.self) {
      try await ProcessRunner.sqlite3(path, "DELETE FROM session_retention")
    }
  }

  @Test func theShellsWritesApplyThePolicyToo() async throws {
    let store = try SessionStore(path: path)
    try store.requireFile().setRetention(Retention(keepLast: 2))
    for index in 0..<6 {
      _ = try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'sh\(index)' WHERE id = 1")
    }
    #expect(try cursors(store) == [5, 6])
    #expect(try failedChecks(store) == [])
  }

  @Test func compactOlderThanDeletesEverythingOldAndCheckStillPasses() async throws {
    let store = try SessionStore(path: path)
    try await insertOldRows(3)
    try await store.logIn(as: "alice")
    #expect(try store.compact(olderThan: .seconds(3600)).removed == 3)
    #expect(try cursors(store) == [4])
    // An age of zero deletes what was recorded before the current millisecond: the write
    // above may have fallen into it, so the test waits for SQLite's clock to move on.
    while try !clockHasPassed(4, store) { try await Task.sleep(for: .milliseconds(1)) }
    let all = try store.compact(olderThan: .zero)
    #expect(all.removed == 1)
    #expect(all.bounds == FeedBounds(oldest: nil, head: Cursor(4)))
    #expect(try failedChecks(store) == [])
    #expect(throws: SessionStorageError.self) { try store.compact(olderThan: .seconds(-1)) }
  }

  /// The largest age (``Retention/maximumAge``, whose cutoff counted back from any clock
  /// after 1970 is a date SQLite's date functions represent) deletes what is older — a
  /// change of the year 1 — and never the change written a moment ago; one millisecond
  /// more, and `Int64.max` seconds, are refused with `invalidArgument` by
  /// `compact(olderThan:)` and `setRetention`, on both stores, and delete nothing.
  @Test func theLargestAgeDeletesNothingYoungAndOneMoreIsRefused() async throws {
    let store = try SessionStore(path: path)
    try await insertOldRows(1, at: "0001-01-01T00:00:00.000Z")
    try await store.logIn(as: "alice")
    let largest = Retention.maximumAge
    #expect(largest == .seconds(719_528 * 86_400))
    #expect(try store.compact(olderThan: largest).removed == 1, "the change of the year 1 is older")
    #expect(try cursors(store) == [2])
    let beyond = [largest + .milliseconds(1), .seconds(Int64.max)]
    for age in beyond {
      let compaction = #expect(throws: SessionStorageError.self) { try store.compact(olderThan: age) }
      #expect(compaction?.code == .invalidArgument)
      #expect(compaction?.message.contains("at most 719528d") == true, "\(String(describing: compaction))")
      let policy = #expect(throws: SessionStorageError.self) {
        try store.requireFile().setRetention(Retention(maxAge: age))
      }
      #expect(policy?.code == .invalidArgument)
      #expect(policy?.message.contains("at most 719528d") == true, "\(String(describing: policy))")
    }
    #expect(try cursors(store) == [2])
    #expect(try store.requireFile().retention() == .off)
    #expect(try store.requireFile().setRetention(Retention(maxAge: largest)).removed == 0)
    try await store.rename(to: "bob")
    #expect(try cursors(store) == [2, 3])

    let memory = try SessionStore.inMemory(origin: "memory")
    try await memory.logIn(as: "alice")
    #expect(try memory.compact(olderThan: largest).removed == 0)
    for age in beyond {
      let compaction = #expect(throws: SessionStorageError.self) { try memory.compact(olderThan: age) }
      #expect(compaction?.code == .invalidArgument)
    }
    #expect(try memory.bounds() == FeedBounds(oldest: Cursor(1), head: Cursor(1)))
  }

  /// The age DELETE itself deletes nothing when SQLite cannot compute its cutoff (the date
  /// an age beyond the range gives is NULL), instead of every entry.
  @Test func anAgeWhoseCutoffSQLiteCannotComputeDeletesNothing() throws {
    let store = try SessionStore(path: path)
    try store.blocking.logIn(as: "alice")
    #expect(
      try store.requireFile().backend.maintain(SQLiteFile.olderThanSQL, [.integer(Int64.max)]).removed == 0)
    #expect(
      try store.requireFile().backend.maintain(SQLiteFile.olderThanSQL, [.integer(3_000_000 * 86_400_000)])
        .removed
        == 0)
    #expect(try cursors(store) == [1])
  }

  @Test func theInMemoryStoreCompactsByAgeAlike() async throws {
    let store = try SessionStore.inMemory(origin: "memory")
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    #expect(try store.compact(olderThan: .seconds(3600)).removed == 0)
    try await Task.sleep(for: .milliseconds(20))
    let all = try store.compact(olderThan: .milliseconds(10))
    #expect(all == CompactionResult(removed: 2, bounds: FeedBounds(oldest: nil, head: Cursor(2))))
    #expect(throws: SessionStorageError.self) { try store.compact(olderThan: .seconds(-1)) }
  }

  /// Four processes write 100 changes each while the policy keeps 10: the parent samples
  /// the kept cursors meanwhile (every millisecond, yielding its thread to other tests), and
  /// at every sample and at the end the kept entries are exactly the newest 10 (all of them
  /// below 10), with no hole.
  @Test func keepLastHoldsUnderConcurrentWriterProcesses() async throws {
    let store = try SessionStore(path: path)
    try store.requireFile().setRetention(Retention(keepLast: 10))
    var writers: [ChildProcess] = []
    for index in 0..<4 {
      writers.append(
        try await ChildProcess(
          Self.torture, ["write", "--db", path, "--count", "100", "--origin", "w\(index)"],
          environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe, stderr: .file(dir.file("stderr-\(index)"))))
    }
    while writers.contains(where: { $0.status(within: .zero) == nil }) {
      let kept = try cursors(store)
      if let last = kept.last { #expect(kept == Array(max(1, last - 9)...last)) }
      try await Task.sleep(for: .milliseconds(1))
    }
    for (index, writer) in writers.enumerated() {
      while try await writer.readLine(timeout: .seconds(60)) != nil {}
      let status = try await writer.wait(timeout: .seconds(60))
      let stderr = (try? String(contentsOfFile: dir.file("stderr-\(index)"), encoding: .utf8)) ?? ""
      #expect(status == 0, "writer \(index): \(stderr)")
    }
    let head = try store.bounds().head.value
    #expect(head == 400)
    #expect(try cursors(store) == Array(head - 9...head))
    #expect(try failedChecks(store) == [])
  }
}
