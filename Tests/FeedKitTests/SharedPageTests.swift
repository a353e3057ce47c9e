import FeedKit
import Synchronization
import TestSupport
import Testing

/// Subscribers woken by one commit share the page one of them read, and only those that
/// wait on the same cursor do.
@Suite(.timeLimit(.minutes(10))) struct SharedPageTests {
  @Test func subscribersWaitingOnOneCursorShareOneRead() async throws {
    let log = ArrayLog()
    log.append(1)
    let feed = log.feed
    let subscribers = 8
    let received = Received(subscribers)
    var tasks: [Task<Void, any Error>] = []
    for index in 0..<subscribers {
      let subscription = try feed.changes(from: .now)
      tasks.append(
        Task.detached {
          for try await entry in subscription {
            received.values.withLock { $0[index].append(entry.change) }
            if entry.change == 3 { return }
          }
        })
    }
    log.append(2)
    #expect(await eventually { received.values.withLock { $0.allSatisfy { $0 == [2] } } })
    let before = log.reads.withLock { $0 }
    log.append(3)
    for task in tasks { try await task.value }
    #expect(received.values.withLock { $0 } == Array(repeating: [2, 3], count: subscribers))
    #expect(log.reads.withLock { $0 } - before == 1, "one read for the eight of them")
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

/// What each subscriber received, shared with their tasks.
private final class Received: Sendable {
  let values: Mutex<[[Int]]>

  init(_ subscribers: Int) { values = Mutex(Array(repeating: [], count: subscribers)) }
}
