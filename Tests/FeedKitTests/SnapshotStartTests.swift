import Synchronization
import TestSupport
import Testing

@testable import FeedKit

/// A subscription that starts from a snapshot (or `.now`) has delivered no entry yet, but it
/// knows the entry at its cursor: a log rewritten under it while it does not read (a
/// restore of an older copy that grew past its cursor again before it reads) ends it, or
/// makes values take a new snapshot, instead of going on under reused cursors.
@Suite(.timeLimit(.minutes(10))) struct SnapshotStartTests {
  enum Start: String, CaseIterable, Sendable {
    case snapshotAndChanges, now
  }

  /// Cursors 1…5, then a subscription at 5 that does not read yet.
  func subscribe(_ start: Start, to log: ArrayLog) throws -> FeedSubscription<Int, Int> {
    for value in 1...5 { log.append(value) }
    switch start {
    case .snapshotAndChanges:
      let snapshot = try log.feed.snapshotAndChanges()
      #expect(snapshot.state == 5)
      return snapshot.changes
    case .now: return try log.feed.changes(from: .now)
    }
  }

  @Test(arguments: Start.allCases)
  func aRewriteThatPassesTheCursorBeforeTheFirstReadEndsTheSubscription(_ start: Start) async throws {
    let log = ArrayLog()
    let subscription = try subscribe(start, to: log)
    #expect(subscription.cursor == Cursor(5))
    // Another process restores a copy taken at 3 and commits three changes: 4, 5 and 6 again.
    log.rewrite(after: Cursor(3), with: [40, 50, 60])
    log.beacon.signal()
    do {
      let delivered = try await first(1, of: subscription, within: .seconds(30))
      Issue.record("delivered \(delivered.map { "\($0.change) at \($0.cursor)" }) of a rewritten history")
    } catch let error as FeedError {
      guard case .historyRewritten(let cursor, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(cursor == Cursor(5))
      #expect(reason.contains("not the one delivered"), "\(reason)")
    }
  }

  /// The same rewrite reaching exactly the old cursor: nothing follows it, so only the check
  /// of the entry at the cursor tells values that their state is another history's.
  @Test func valuesTakeANewSnapshotWhenTheLogIsRewrittenUpToTheirCursor() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    var values = log.feed.values { $1.change }.makeAsyncIterator()
    #expect(try await values.next() == 5)
    log.rewrite(after: Cursor(3), with: [40, 50])
    log.beacon.signal()
    // Values that missed the rewrite would wait for the next commit: it comes late, and
    // only for them.
    let late = Task {
      try await Task.sleep(for: .seconds(60))
      log.append(99)
    }
    defer { late.cancel() }
    #expect(try await values.next() == 50)
  }

  /// With nothing rewritten, a subscription from a snapshot delivers what follows it.
  @Test(arguments: Start.allCases)
  func anUnchangedLogIsFollowedFromTheSnapshot(_ start: Start) async throws {
    let log = ArrayLog()
    let subscription = try subscribe(start, to: log)
    log.append(6)
    log.append(7)
    #expect(try await first(2, of: subscription).map(\.change) == [6, 7])
  }

  /// A log whose entry at the snapshot's cursor was compacted away leaves nothing to
  /// compare: the subscription follows what comes, as one resuming after that cursor does.
  @Test func aSnapshotWhoseEntryWasCompactedFollowsTheLog() async throws {
    let log = ArrayLog()
    for value in 1...5 { log.append(value) }
    log.compact(before: Cursor(6))
    let snapshot = try log.feed.snapshotAndChanges()
    log.append(6)
    #expect(try await first(1, of: snapshot.changes).map(\.change) == [6])
  }
}
