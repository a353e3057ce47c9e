import Synchronization
import TestSupport
import Testing

@testable import FeedKit

/// Subscribers woken by one commit share the page one of them read, and only those that
/// wait on the same cursor do.
@Suite(.timeLimit(.minutes(10))) struct SharedPageTests {
  @Test func subscribersWaitingOnOneCursorShareOneRead() async throws {
    let log = ArrayLog()
    log.append(1)
    let feed = log.feed
    let subscribers = 8
    let received = Received(subscribers)
    let before = Mutex(0)
    // Kept until every task has its entries: a subscriber whose task ended early would leave
    // the last ones fewer to share with.
    let subscriptions = try (0..<subscribers).map { _ in try feed.changes(from: .now) }
    defer { withExtendedLifetime(subscriptions) {} }
    // Child tasks: the suite's time limit ends them with the test.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, subscription) in subscriptions.enumerated() {
        group.addTask {
          for try await entry in subscription {
            received.values.withLock { $0[index].append(entry.change) }
            if entry.change == 3 { return }
          }
        }
      }
      log.append(2)
      #expect(await eventually { received.values.withLock { $0.allSatisfy { $0 == [2] } } })
      before.withLock { $0 = log.reads.withLock { $0 } }
      log.append(3)
      try await group.waitForAll()
    }
    #expect(received.values.withLock { $0 } == Array(repeating: [2, 3], count: subscribers))
    #expect(log.reads.withLock { $0 } - before.withLock { $0 } == 1, "one read for the eight of them")
  }

  @Test func subscribersAtOtherCursorsReadTheirOwnPages() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    let feed = log.feed
    let fromNow = try feed.changes(from: .now)
    let fromTwo = try feed.changes(from: .after(Cursor(2)))
    let fromStart = try feed.changes(from: .beginning)
    for value in 6...7 { log.append(value) }
    async let now = first(2, of: fromNow)
    async let two = first(5, of: fromTwo)
    async let start = first(7, of: fromStart)
    #expect(try await now.map(\.change) == [6, 7])
    #expect(try await two.map(\.change) == [3, 4, 5, 6, 7])
    #expect(try await start.map(\.change) == Array(1...7))
  }
}

/// A page kept from an earlier read is handed out only while the log is unchanged: the
/// attack is a subscriber that reads and goes, a change nobody is woken for (another process
/// commits or restores while this one has no subscriber), then a new subscriber.
@Suite(.timeLimit(.minutes(10))) struct StalePageTests {
  /// Reads once through a subscription after `start`, as a subscriber that caught up and
  /// then went away: the page it read stays with the feed.
  func readAndRelease(_ feed: Feed<Int, Int>, from start: FeedStart, _ log: ArrayLog, count: Int) async throws
  {
    let before = log.reads.withLock { $0 }
    let received = try await first(count, of: feed.changes(from: start))
    #expect(received.count == count)
    #expect(log.reads.withLock { $0 } > before)
  }

  @Test(arguments: [FeedStart.after(Cursor(3)), .beginning])
  func changesNobodyWasWokenForReachANewSubscriber(_ start: FeedStart) async throws {
    let log = ArrayLog()
    for value in 1...3 { log.append(value) }
    let feed = log.feed
    // The first subscriber reads the page after its start and waits there; it goes. (The
    // count is taken before its task starts, which may read at once.)
    let reads = log.reads.withLock { $0 }
    let caughtUp = Task {
      for try await _ in try feed.changes(from: start) {}
    }
    #expect(await eventually { log.reads.withLock { $0 } > reads })
    caughtUp.cancel()
    _ = try? await caughtUp.value
    // Commits that no watcher sees (none runs without a subscriber).
    log.appendUnnoticed(4)
    log.appendUnnoticed(5)
    let expected = start == .beginning ? [1, 2, 3, 4, 5] : [4, 5]
    let received = try await first(expected.count, of: feed.changes(from: start))
    #expect(received.map(\.change) == expected)
  }

  @Test func aRestoreNobodyWasWokenForHandsANewSubscriberNoEntryThatIsGone() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    let feed = log.feed
    // A subscriber reads 4 and 5 after 3, then goes: the page after 3 holds them.
    try await readAndRelease(feed, from: .after(Cursor(3)), log, count: 2)
    // Another process restores a copy taken at 3, then commits 6 at cursor 4.
    log.rewrite(after: Cursor(3), with: [])
    log.appendUnnoticed(6)
    let received = try await first(1, of: feed.changes(from: .after(Cursor(3))))
    #expect(received.map(\.change) == [6])
    #expect(received.map(\.cursor) == [Cursor(4)])
  }

  @Test func subscribersShareAPageOnlyWhileTheVersionStands() async throws {
    let log = ArrayLog()
    for value in 1...2 { log.append(value) }
    let feed = log.feed
    // Two subscriptions: a page one of them reads may serve the other.
    let subscriptions = [try feed.changes(from: .now), try feed.changes(from: .now)]
    defer { withExtendedLifetime(subscriptions) {} }
    let reads = log.reads.withLock { $0 }
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2])
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2])
    #expect(log.reads.withLock { $0 } - reads == 1, "the second is the first's page")
    log.appendUnnoticed(3)
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2, 3])
    #expect(log.reads.withLock { $0 } - reads == 2)
  }
}

/// A lone subscriber has nobody to share a page with: it reads each page itself, without
/// the version read that proves a kept page fresh, and nobody reads ahead for it; a page
/// kept while others subscribed is never handed to it.
@Suite(.timeLimit(.minutes(10))) struct LoneSubscriberTests {
  @Test func aLoneSubscriberReadsEachPageItselfAndIsNeverHandedAKeptOne() async throws {
    let log = ArrayLog()
    for value in 1...2 { log.append(value) }
    let feed = log.feed
    var others = [try feed.changes(from: .now), try feed.changes(from: .now)]
    // While two subscribe, the page after 1 is kept.
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2])
    others.removeLast()
    let reads = log.reads.withLock { $0 }
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2])
    #expect(log.reads.withLock { $0 } - reads == 1, "alone, it reads the page itself")
    // A change nobody was woken for: a kept page handed out without the version would miss it.
    log.appendUnnoticed(3)
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2, 3])
    // Nobody reads ahead for a lone subscriber.
    let beforeReadAhead = log.reads.withLock { $0 }
    feed.readAhead()
    #expect(log.reads.withLock { $0 } == beforeReadAhead)
    withExtendedLifetime(others) {}
  }

  @Test func twoSubscribersShareAndOneThatGoesLeavesTheOtherReadingAlone() async throws {
    let log = ArrayLog()
    log.append(1)
    let feed = log.feed
    var subscriptions = [try feed.changes(from: .now), try feed.changes(from: .now)]
    log.appendUnnoticed(2)
    let reads = log.reads.withLock { $0 }
    _ = try feed.subscriberPage(after: Cursor(1), last: nil)
    _ = try feed.subscriberPage(after: Cursor(1), last: nil)
    #expect(log.reads.withLock { $0 } - reads == 1)
    subscriptions.removeLast()
    _ = try feed.subscriberPage(after: Cursor(1), last: nil)
    #expect(log.reads.withLock { $0 } - reads == 2)
    withExtendedLifetime(subscriptions) {}
  }
}

/// A log with a cursor missing in its middle (rows deleted or inserted by hand) ends a
/// subscription and a history read with a typed error, wherever the gap falls in a page.
@Suite(.timeLimit(.minutes(10))) struct GapTests {
  @Test(arguments: [2, 3, 4, 5])
  func aMissingCursorIsNeverSkipped(_ missing: Int64) async throws {
    let log = ArrayLog()
    for value in 1...6 where Int64(value) != missing { log.append(value, at: Cursor(Int64(value))) }
    let feed = log.feed  // pages of 3
    var received: [Int64] = []
    var ending: (any Error)?
    do {
      for try await entry in try feed.changes(from: .beginning) {
        received.append(entry.cursor.value)
        if received.count == 6 { break }
      }
    } catch {
      ending = error
    }
    guard case .historyRewritten(_, let reason) = ending as? FeedError else {
      Issue.record("ended with \(String(describing: ending)) after \(received)")
      return
    }
    #expect(reason.contains("entry \(missing) is missing"), "\(reason)")
    #expect(received == (0..<received.count).map { Int64($0) + 1 } && received.count < missing, "\(received)")
    #expect(throws: FeedError.self) { try feed.history(from: .beginning, limit: 10) }
  }
}

/// What each subscriber received, shared with their tasks.
private final class Received: Sendable {
  let values: Mutex<[[Int]]>

  init(_ subscribers: Int) { values = Mutex(Array(repeating: [], count: subscribers)) }
}
