import Foundation
import Synchronization
import TestSupport
import Testing

@testable import FeedKit

/// A shared page is handed only to a subscriber whose own read would return it now: one
/// that asks after the same cursor, having delivered the same entry there, while the
/// source's version has not moved since *before* the page was read.
@Suite(.timeLimit(.minutes(10))) struct SharedPageFreshnessTests {
  /// After a restore, a subscriber still on the old history asks after the same cursor as
  /// one on the new history: the new one's page is not the old one's read, which fails.
  @Test func aSubscriberOnTheOldHistoryIsNotHandedThePageOfTheNewOne() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    let feed = log.feed  // pages of 3
    let old = try feed.changes(from: .beginning)
    var behind = old.makeAsyncIterator()
    for _ in 1...5 { _ = try await behind.next() }
    #expect(behind.cursor == Cursor(5))
    // Another process restores a copy taken at 3 and commits 4, 5 and 6 again.
    log.rewrite(after: Cursor(3), with: [40, 50, 60])
    // A subscriber that starts on the new history reads the page after 5, and keeps it.
    let new = try feed.changes(
      from: .afterEntry(Cursor(5), time: try #require(log.entry(at: Cursor(5))).time))
    #expect(try await first(1, of: new).map(\.change) == [60])
    // The one that delivered the old entry 5 reads on.
    log.beacon.signal()
    do {
      let entry = try await behind.next()
      Issue.record("delivered \(entry.map { "\($0.change) at \($0.cursor)" } ?? "nothing") after the old 5")
    } catch let error as FeedError {
      guard case .historyRewritten(let cursor, _) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(cursor == Cursor(5))
    }
    withExtendedLifetime((old, new)) {}
  }

  /// A page read ahead while another process commits: the page is stamped with the version
  /// read before it, so the commit that landed after the read moves the version past the
  /// stamp and the next subscriber reads it.
  @Test func aCommitDuringAReadAheadIsNotHidden() throws {
    let log = ArrayLog()
    for value in 1...2 { log.append(value) }
    let feed = log.feed
    let subscriptions = [try feed.changes(from: .now), try feed.changes(from: .now)]
    defer { withExtendedLifetime(subscriptions) {} }
    let page = try feed.subscriberPage(after: Cursor(1), last: nil)
    #expect(page.map(\.change) == [2])
    log.appendUnnoticed(3)
    log.afterNextRead.withLock { $0 = { log.appendUnnoticed(4) } }
    feed.readAhead()  // reads [3], then 4 commits
    let next = try feed.subscriberPage(after: Cursor(2), last: page.last)
    #expect(next.map(\.change) == [3, 4])
  }

  /// The same for a page a subscriber reads and shares: 3 commits while it reads [2].
  @Test func aCommitDuringASharedReadIsNotHidden() throws {
    let log = ArrayLog()
    for value in 1...2 { log.append(value) }
    let feed = log.feed
    let subscriptions = [try feed.changes(from: .now), try feed.changes(from: .now)]
    defer { withExtendedLifetime(subscriptions) {} }
    log.afterNextRead.withLock { $0 = { log.appendUnnoticed(3) } }
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2])
    #expect(try feed.subscriberPage(after: Cursor(1), last: nil).map(\.change) == [2, 3])
  }
}
