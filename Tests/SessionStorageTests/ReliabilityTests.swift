import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Failures SQLite can report mid-write leave the state and the feed consistent.
@Suite(.timeLimit(.minutes(10))) struct ReliabilityTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  @Test func aFullDatabaseFailsTheWriteClearlyAndRecovers() throws {
    let store = try SessionStore(path: path)
    try store.blocking.logIn(as: "alice")
    let pages = try #require(try store.requireFile().backend.writerInteger("PRAGMA page_count"))
    #expect(try store.requireFile().backend.writerInteger("PRAGMA max_page_count = \(pages)") == pages)
    // Each change row is small; a long name fills the last page quickly.
    var failure: SessionStorageError?
    for index in 0..<500 where failure == nil {
      do {
        try store.blocking.rename(to: String(repeating: "n", count: 250) + "\(index)")
      } catch let error as SessionStorageError {
        failure = error
      }
    }
    let error = try #require(failure)
    #expect(error.code == .full)
    #expect(error.description.contains(path))
    let head = try store.bounds().head
    #expect(try store.history(from: .beginning, limit: 1000).last?.after.username == store.state.username)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })

    _ = try store.requireFile().backend.writerInteger("PRAGMA max_page_count = 1073741823")
    let next = try #require(try store.blocking.rename(to: "back"))
    #expect(next.cursor == head.next)
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
  }

  @Test func concurrentWritersInOneProcessNeverSeeBusy() async throws {
    let stores = try (0..<4).map { try SessionStore(path: path, options: .init(origin: "writer\($0)")) }
    let cursors = try await withThrowingTaskGroup(of: [Cursor].self) { group in
      for (index, store) in stores.enumerated() {
        // Blocking writes, each on a thread of its own: not on the cooperative pool's few.
        group.addTask {
          try await onThreadOfItsOwn {
            try (0..<100).compactMap { step in try store.blocking.rename(to: "w\(index)-\(step)")?.cursor }
          }
        }
      }
      return try await group.reduce(into: []) { $0 += $1 }
    }
    #expect(cursors.count == 400)
    #expect(cursors.sorted().map(\.value) == Array(1...400))
  }

  @Test func anIdleSubscriberDoesNotHoldTheWALOpen() async throws {
    let store = try SessionStore(path: path, options: .init(durability: .normal))
    let idle = try store.changes(from: .now)
    var iterator = idle.makeAsyncIterator()
    try await store.logIn(as: "first")
    _ = try await iterator.next()
    // 3,000 writes with a subscriber that does not read: checkpoints must still reset the WAL.
    for step in 0..<3000 { try await store.rename(to: "user\(step)") }
    let walSize =
      (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
    // The default auto-checkpoint keeps the WAL near 1,000 pages (4 MB); an open read
    // transaction would let it grow with every write.
    #expect(walSize < 8 * 1024 * 1024, "WAL is \(walSize) bytes")
    // A new iterator of the same subscription starts again after its cursor: 1 + 3,000 entries.
    let pending = try await first(3001, of: idle)
    #expect(pending.first?.after.username == "first")
    #expect(pending.last?.after.username == "user2999")
  }
}
