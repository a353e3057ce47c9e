import Foundation
import Synchronization
import SystemKit
import TestSupport
import Testing

@testable import FeedKit

@Suite(.timeLimit(.minutes(10))) struct CursorTests {
  @Test(arguments: ["0", "1", "42", "9223372036854775807"])
  func parsesWholeNumbers(_ text: String) {
    #expect(Cursor(text)?.description == text)
  }

  @Test(arguments: ["", "-1", "+1", "1.5", "abc", " 1", "1 ", "9223372036854775808", "١٢"])
  func refusesAnythingElse(_ text: String) {
    #expect(Cursor(text) == nil)
  }

  @Test func ordersByNumber() {
    #expect(Cursor(1) < Cursor(2))
    #expect(Cursor(1).next == Cursor(2))
    #expect(FeedBounds(oldest: nil, head: Cursor(5)).firstAvailable == Cursor(6))
  }

  @Test func theEndsOfTheRangeHaveNoNeighbourInsteadOfATrap() {
    #expect(Cursor(.max).next == nil)
    #expect(Cursor(.max - 1).next == Cursor(.max))
    #expect(Cursor(.min).previous == nil)
    #expect(Cursor(.min + 1).previous == Cursor(.min))
    #expect(FeedBounds(oldest: nil, head: Cursor(.max)).firstAvailable == Cursor(.max))
    #expect(
      FeedError.cursorCompacted(requested: Cursor(.min), oldestAvailable: Cursor(.min)).description
        == "cursor \(Int64.min) was compacted away; the oldest available entry is \(Int64.min): start again from a snapshot"
    )
  }

  @Test func aLogWithEntriesAtTheEndsOfTheRangeIsServedOrRefusedWithATypedError() async throws {
    let log = ArrayLog()
    for value in 1...2 { log.append(value) }
    log.append(3, at: Cursor(.max))
    // A row at the largest cursor right after 2 leaves a gap: refused, never skipped.
    #expect(throws: FeedError.self) { try log.feed.history(from: .beginning, limit: 10) }
    #expect(throws: FeedError.self) { try log.feed.history(from: .after(Cursor(2)), limit: 10) }
    #expect(try log.feed.history(from: .after(Cursor(.max)), limit: 10).isEmpty)
    #expect(try log.feed.history(from: .after(Cursor(.max - 1)), limit: 10).map(\.change) == [3])
    log.compact(before: Cursor(.max))
    #expect(throws: FeedError.cursorCompacted(requested: Cursor(1), oldestAvailable: Cursor(.max))) {
      try log.feed.history(from: .after(Cursor(1)), limit: 10)
    }
    // What is left starts at the largest cursor, which no entry can follow.
    #expect(try await first(1, of: log.feed.changes(from: .beginning)).map(\.change) == [3])

    let low = ArrayLog()
    low.append(1, at: Cursor(.min))
    low.append(2, at: Cursor(1))
    #expect(throws: FeedError.noCursorBefore(Cursor(.min))) {
      try low.feed.history(from: .beginning, limit: 10)
    }
    #expect(throws: FeedError.noCursorBefore(Cursor(.min))) { try low.feed.changes(from: .beginning) }
    #expect(try low.feed.history(from: .after(.zero), limit: 10).map(\.change) == [2])
    #expect(throws: FeedError.self) { try low.feed.history(from: .after(Cursor(.min)), limit: 10) }
  }
}

@Suite(.timeLimit(.minutes(10))) struct FeedTests {
  @Test func pagesDeliverEveryEntryOnceInOrder() async throws {
    let log = ArrayLog()
    for value in 1...4 { log.append(value) }
    let subscription = try log.feed.changes(from: .beginning)
    let writer = Task.detached { for value in 5...20 { log.append(value) } }
    await writer.value
    #expect(try await first(20, of: subscription).map(\.change) == Array(1...20))
  }

  @Test func startsNowAfterCursorAndRefusesBadCursors() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    let now = try log.feed.changes(from: .now)
    #expect(now.cursor == Cursor(5))
    #expect(try log.feed.changes(from: .after(Cursor(2))).cursor == Cursor(2))
    #expect(throws: FeedError.cursorAhead(requested: Cursor(6), head: Cursor(5))) {
      try log.feed.changes(from: .after(Cursor(6)))
    }
    log.compact(before: Cursor(4))
    #expect(throws: FeedError.cursorCompacted(requested: Cursor(2), oldestAvailable: Cursor(4))) {
      try log.feed.changes(from: .after(Cursor(2)))
    }
    #expect(try log.feed.changes(from: .after(Cursor(3))).cursor == Cursor(3))
    #expect(try log.feed.changes(from: .beginning).cursor == Cursor(3))
    log.compact(before: Cursor(99))
    #expect(try log.feed.history(from: .beginning, limit: 10).isEmpty)
    #expect(try log.feed.changes(from: .after(Cursor(5))).cursor == Cursor(5))
  }

  @Test func aSubscriberOvertakenByCompactionFailsInsteadOfSkipping() async throws {
    let log = ArrayLog()
    log.append(1)
    let subscription = try log.feed.changes(from: .now)
    for value in 2...6 { log.append(value) }
    log.compact(before: Cursor(4))
    await #expect(throws: FeedError.cursorCompacted(requested: Cursor(1), oldestAvailable: Cursor(4))) {
      _ = try await first(1, of: subscription)
    }
  }

  @Test func valuesStartWithTheSnapshotAndDropRepeats() async throws {
    let log = ArrayLog()
    log.append(7)
    var values = log.feed.values { $1.change }.makeAsyncIterator()
    #expect(try await values.next() == 7)
    for value in [7, 7, 8, 8, 9] { log.append(value) }
    #expect(try await values.next() == 8)
    #expect(try await values.next() == 9)
  }

  @Test func valuesRecoverFromCompactionWithAFreshSnapshot() async throws {
    let log = ArrayLog()
    log.append(1)
    var values = log.feed.values { $1.change }.makeAsyncIterator()
    #expect(try await values.next() == 1)
    for value in 2...5 { log.append(value) }
    log.compact(before: Cursor(5))
    #expect(try await values.next() == 5)
  }

  /// A subscriber far behind the writer finds a full page at every read and never waits
  /// for a wake-up; it still lets the actor it follows the feed on run other work between
  /// pages.
  @Test func aSubscriberThatNeverWaitsStillLetsItsActorRunOtherWork() async throws {
    let log = ArrayLog()
    let limit = 2_000
    for value in 0..<limit { log.appendUnnoticed(value) }
    let received = try await FollowingActor().follow(log, limit: limit)
    #expect(received < limit, "the other work on the actor ran only after \(received) entries")
  }

  @Test func cancellingATaskEndsItsSubscription() async throws {
    let log = ArrayLog()
    let subscription = try log.feed.changes(from: .now)
    #expect(log.beacon.listenerCount == 1)
    let task = Task {
      var count = 0
      for try await _ in subscription { count += 1 }
      return count
    }
    log.append(1)
    #expect(await eventually { log.beacon.generation >= 1 })
    task.cancel()
    #expect(try await task.value <= 1)
  }

  /// An iterator that returned nil stays ended, whichever task asks next, and releases its
  /// registration; one that threw returns nil afterwards.
  @Test func anEndedIteratorStaysEnded() async throws {
    let log = ArrayLog()
    // Iterators are not Sendable; the test hands one from a cancelled task to a live one on
    // purpose, as a caller that shares one by mistake would.
    nonisolated(unsafe) var iterator = try log.feed.changes(from: .now).makeAsyncIterator()
    #expect(log.beacon.listenerCount == 1)
    let cancelled = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await iterator.next()
    }
    #expect(try await cancelled.value == nil)
    #expect(log.beacon.listenerCount == 0, "the ended iterator released its registration")
    log.append(1)
    #expect(try await iterator.next() == nil, "a live task gets nothing from an ended iterator")

    nonisolated(unsafe) var values = log.feed.values { $1.change }.makeAsyncIterator()
    let cancelledValues = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await values.next()
    }
    #expect(try await cancelledValues.value == nil)
    log.append(2)
    #expect(try await values.next() == nil)

    let compacted = ArrayLog()
    for value in 1...3 { compacted.append(value) }
    var failing = try compacted.feed.changes(from: .after(Cursor(0))).makeAsyncIterator()
    compacted.compact(before: Cursor(3))
    await #expect(throws: FeedError.self) { try await failing.next() }
    compacted.append(4)
    #expect(try await failing.next() == nil, "after a throw, nil")
  }

  /// A read error the source calls transient (a server that cannot be reached for now) is
  /// waited out: the subscriber reads again at the next wake-up, from its cursor; any
  /// other read error ends the subscription.
  @Test func aTransientReadErrorIsWaitedOutAndOthersEndTheSubscription() async throws {
    let log = ArrayLog()
    let subscription = try log.feed.changes(from: .now)
    var iterator = subscription.makeAsyncIterator()
    log.append(1)
    #expect(try await iterator.next()?.change == 1)
    log.failure.withLock { $0 = ArrayLog.ReadFailure(transient: true) }
    log.append(2)
    let outage = Task.detached {
      // Wake-ups while the source still fails: each read fails again, and the iterator waits.
      for _ in 0..<3 {
        try await Task.sleep(for: .milliseconds(20))
        log.beacon.signal()
      }
      log.failure.withLock { $0 = nil }
      log.beacon.signal()
    }
    #expect(try await iterator.next()?.change == 2, "the entry after the outage, once")
    try await outage.value

    log.failure.withLock { $0 = ArrayLog.ReadFailure(transient: false) }
    log.append(3)
    await #expect(throws: ArrayLog.ReadFailure(transient: false)) { try await iterator.next() }
  }

  @Test func droppingTheLastSubscriptionReleasesTheListener() throws {
    let log = ArrayLog()
    do {
      let subscription = try log.feed.changes(from: .now)
      let iterator = subscription.makeAsyncIterator()
      #expect(log.beacon.listenerCount == 1)
      _ = iterator
    }
    #expect(log.beacon.listenerCount == 0)
  }
}

@Suite(.timeLimit(.minutes(10))) struct BeaconTests {
  @Test func aSignalWakesEveryWaiter() async {
    let beacon = Beacon()
    let generation = beacon.generation
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<10 { group.addTask { await beacon.wait(past: generation) } }
      try? await Task.sleep(for: .milliseconds(10))
      beacon.signal()
    }
    #expect(beacon.generation == generation + 1)
  }

  @Test func aSignalBeforeTheWaitIsNotLost() async {
    let beacon = Beacon()
    let generation = beacon.generation
    beacon.signal()
    await beacon.wait(past: generation)
  }

  @Test func cancellationEndsAWait() async {
    let beacon = Beacon()
    let task = Task { await beacon.wait(past: beacon.generation) }
    task.cancel()
    _ = await task.value
  }

  @Test func activationFollowsTheFirstAndLastListener() {
    let events = Mutex<[String]>([])
    let beacon = Beacon(
      activate: { _ in events.withLock { $0.append("on") } },
      deactivate: { events.withLock { $0.append("off") } })
    var first: WakeListener? = beacon.listen()
    var second: WakeListener? = beacon.listen()
    #expect(events.withLock { $0 } == ["on"])
    first = nil
    #expect(events.withLock { $0 } == ["on"])
    second = nil
    #expect(events.withLock { $0 } == ["on", "off"])
    _ = (first, second)
  }
}

@Suite(.timeLimit(.minutes(10))) struct ChangeWatcherTests {
  @Test func anEventOnAWatchedFileTriggersARecheck() async throws {
    let dir = try TemporaryDirectory()
    let changed = Mutex(false)
    let calls = Mutex(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["watched"], pollInterval: .seconds(30),
      hasChanged: { changed.withLock { $0 } }, onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    try Data("x".utf8).write(to: URL(fileURLWithPath: dir.file("ignored")))
    try await Task.sleep(for: .milliseconds(100))
    #expect(calls.withLock { $0 } == 0, "other files and unchanged state wake nobody")
    changed.withLock { $0 = true }
    try Data("x".utf8).write(to: URL(fileURLWithPath: dir.file("watched")))
    #expect(await eventually { calls.withLock { $0 } >= 1 })
  }

  @Test func aCommitThatBecomesVisibleLateIsStillSeen() async throws {
    let dir = try TemporaryDirectory()
    let checks = Mutex(0)
    let calls = Mutex(0)
    // The state turns "changed" only on the third re-check after the event.
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(30),
      hasChanged: {
        checks.withLock {
          $0 += 1; return $0 == 3
        }
      }, onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    try Data("frame".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    #expect(await eventually { calls.withLock { $0 } == 1 })
  }

  @Test func theSlowPollIsTheSafetyNet() async throws {
    let dir = try TemporaryDirectory()
    let calls = Mutex(0)
    let stopped = Atomic(false)
    let checksAfterStop = Atomic(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: [], pollInterval: .milliseconds(20),
      hasChanged: {
        if stopped.load(ordering: .acquiring) { checksAfterStop.add(1, ordering: .relaxed) }
        return true
      }, onChange: { calls.withLock { $0 += 1 } })
    #expect(await eventually { calls.withLock { $0 } >= 2 })
    // `stop` does not wait: a poll already past its wait may still check once.
    watcher.stop()
    stopped.store(true, ordering: .releasing)
    try await Task.sleep(for: .milliseconds(200))  // ten poll intervals
    #expect(checksAfterStop.load(ordering: .relaxed) <= 1, "nothing runs after stop")
  }

  /// A writer whose fsync is slow publishes its commit long after its last file change:
  /// re-checks go on (every 50 ms) instead of leaving it to the poll.
  @Test func aCommitVisibleLongAfterItsLastEventIsSeenWithoutThePoll() async throws {
    let dir = try TemporaryDirectory()
    let visibleAt = Mutex<ContinuousClock.Instant?>(nil)
    let calls = Mutex(0)
    // Whether it became visible since the last call, as `PRAGMA data_version` says: once.
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(600),
      hasChanged: {
        visibleAt.withLock { visibleAt in
          guard let at = visibleAt, ContinuousClock.now >= at else { return false }
          visibleAt = nil
          return true
        }
      },
      onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    // The last event of the commit, then 300 ms of fsync before it becomes visible.
    visibleAt.withLock { $0 = ContinuousClock.now + .milliseconds(300) }
    try Data("frame".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    #expect(await eventually(timeout: .seconds(60)) { calls.withLock { $0 } == 1 })
  }

  /// One event can announce several commits (inotify merges events that are not read yet,
  /// and a writer writes its next commit's pages while the watcher looks): that one became
  /// visible does not mean the others did. A commit still in its fsync when the first one
  /// was seen becomes visible later without an event of its own, and is seen by the
  /// re-checks, not left to the poll.
  @Test func aSecondCommitOfTheSameEventVisibleAfterTheFirstIsSeenWithoutThePoll() async throws {
    let dir = try TemporaryDirectory()
    // The second commit becomes visible 200 ms after the watcher saw the first.
    let firstSeenAt = Mutex<ContinuousClock.Instant?>(nil)
    let seen = Mutex(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(600),
      hasChanged: {
        let visible = firstSeenAt.withLock { first in
          guard let first else {
            first = ContinuousClock.now
            return 1
          }
          return ContinuousClock.now >= first + .milliseconds(200) ? 2 : 1
        }
        return seen.withLock { seen in
          defer { seen = visible }
          return seen != visible
        }
      }, onChange: {})
    defer { watcher.stop() }
    try Data("two commits' frames".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    #expect(await eventually(timeout: .seconds(20)) { seen.withLock { $0 } == 2 })
  }

  /// Events that come while this process writes are its own commits, which its writer
  /// signals: the watcher looks at them once the writes are over, not before.
  @Test func eventsWhileThisProcessWritesAreLookedAtOnceItsWritesAreOver() async throws {
    let dir = try TemporaryDirectory()
    let writes = Mutex<UInt64>(1)  // a write under way
    let calls = Mutex(0)
    // One commit of another process: changed at the first look, not at later ones.
    let unseen = Mutex(true)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(600),
      hasChanged: {
        unseen.withLock { unseen in
          defer { unseen = false }
          return unseen
        }
      },
      localWrites: { writes.withLock { $0 } }, onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    try Data("frame".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    try await Task.sleep(for: .milliseconds(200))
    #expect(calls.withLock { $0 } == 0, "not while this process writes")
    writes.withLock { $0 += 1 }  // the write is over
    #expect(await eventually { calls.withLock { $0 } == 1 })
  }

  /// A process that writes without a pause (say, writes that change nothing, which wake
  /// nobody) does not keep the watcher from looking for long.
  @Test func eventsWhileThisProcessWritesWithoutAPauseAreStillLookedAt() async throws {
    let dir = try TemporaryDirectory()
    let writes = Mutex<UInt64>(0)
    let calls = Mutex(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db-wal"], pollInterval: .seconds(600), hasChanged: { true },
      localWrites: {
        writes.withLock {
          $0 += 2; return $0
        }
      }, onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    try Data("frame".utf8).write(to: URL(fileURLWithPath: dir.file("db-wal")))
    #expect(await eventually { calls.withLock { $0 } >= 1 })
  }

  /// When inotify cannot be set up the poll wakes, and the watcher says why.
  @Test func notificationsThatCannotBeSetUpFallBackToThePollAndSaySo() async throws {
    let dir = try TemporaryDirectory()
    let calls = Mutex(0)
    let watcher = ChangeWatcher(
      directory: dir.path, fileNames: ["db"], pollInterval: .milliseconds(20),
      notifications: { _ in
        .failure(WatchSetupFailure(reason: SystemLimits.explain(ENOSPC, call: "inotify_add_watch")))
      },
      hasChanged: { true }, onChange: { calls.withLock { $0 += 1 } })
    defer { watcher.stop() }
    guard case .polling(let interval, let reason) = watcher.mode else {
      Issue.record("mode is \(watcher.mode)")
      return
    }
    #expect(interval == .milliseconds(20))
    #expect(reason.contains("inotify_add_watch failed"))
    #expect(reason.contains("fs.inotify.max_user_watches"))
    #expect(await eventually { calls.withLock { $0 } >= 2 })
  }

  @Test func aWorkingWatcherSaysItUsesNotifications() throws {
    let dir = try TemporaryDirectory()
    let watcher = ChangeWatcher(directory: dir.path, fileNames: [], hasChanged: { false }, onChange: {})
    defer { watcher.stop() }
    #expect(watcher.mode == .notifications(pollInterval: .seconds(1)))
  }
}

/// Follows a feed on an actor while other work waits for the same actor.
private actor FollowingActor {
  private var otherWorkRan = false

  private func otherWork() { otherWorkRan = true }

  /// Follows `log` from its beginning; after the first entry, queues other work on this
  /// actor. Returns how many entries were received when that work had run (or `limit`).
  func follow(_ log: ArrayLog, limit: Int) async throws -> Int {
    var count = 0
    for try await _ in try log.feed.changes(from: .beginning) {
      count += 1
      if count == 1 { Task { self.otherWork() } }
      if otherWorkRan || count == limit { break }
    }
    return count
  }
}
