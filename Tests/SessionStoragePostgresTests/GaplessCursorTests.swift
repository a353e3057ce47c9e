import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// Cursors stay gapless, unique and in commit order with many writers on many connections,
/// `psql` writers and transactions that roll back; a subscriber receives every one once.
@Suite(.timeLimit(.minutes(10))) struct GaplessCursorTests {
  @Test func concurrentWritersLeaveNoHoleAndTheSubscriberGetsEveryCursorOnce() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let stores = try (0..<8).map { try SessionStore(postgresURL: url, options: .init(origin: "writer\($0)")) }
    let schema = try stores[0].requirePostgres().schema
    try await stores[0].logIn(as: "start")
    let subscription = try stores[0].changes(from: .beginning)
    // A child task of the test: the test's time limit ends it.
    async let received = { () async throws -> [SessionEntry] in
      var received: [SessionEntry] = []
      for try await entry in subscription {
        received.append(entry)
        if entry.after.username == "done" { break }
      }
      return received
    }()

    let writesPerStore = 25
    let written = try await withThrowingTaskGroup(of: [SessionEntry].self) { group in
      for (index, store) in stores.enumerated() {
        group.addTask {
          var made: [SessionEntry?] = []
          for write in 0..<writesPerStore {
            // Distinct names: every rename and login is a change; a logout is one unless
            // another writer signed out just before.
            if write % 5 == 4 {
              made.append(try await store.logOut())
              made.append(try await store.logIn(as: "w\(index)-\(write)"))
            } else {
              made.append(try await store.rename(to: "w\(index)-\(write)"))
            }
          }
          return made.compactMap { $0 }
        }
      }
      group.addTask {
        for round in 0..<4 {
          _ = try await cluster.psql("UPDATE session SET username = 'psql-\(round)'", schema: schema)
          _ = try await cluster.psql(
            "BEGIN; UPDATE session SET username = 'rolled-back-\(round)'; ROLLBACK;", schema: schema)
        }
        return []
      }
      return try await group.reduce(into: []) { $0 += $1 }
    }
    try await stores[1].rename(to: "done")
    let delivered = try await received

    let head = try stores[0].bounds().head
    let history = try stores[0].history(from: .beginning, limit: .max)
    #expect(history.map(\.cursor.value) == Array(1...head.value), "every cursor once, no hole")
    #expect(written.count >= 8 * writesPerStore)
    #expect(
      head.value == Int64(written.count + 4 + 2),
      "the first login, the library's changes, psql's 4 and the last")
    #expect(Set(written.map(\.cursor)).count == written.count)
    for entry in written {
      #expect(history[Int(entry.cursor.value - 1)] == entry, "each write returned its committed entry")
    }
    #expect(!history.contains { $0.after.username?.hasPrefix("rolled-back") == true })
    #expect(history.filter { $0.origin == "external" }.count == 4)
    #expect(delivered.map(\.cursor) == history.map(\.cursor), "the subscriber got them all, in order, once")
    #expect(delivered == history)
    #expect(try stores[0].check().allSatisfy { $0.verdict == .passed })

    // Compaction that empties the feed never makes a cursor come back.
    let compaction = try stores[2].compact(keepingLast: 0)
    #expect(compaction.bounds == FeedBounds(oldest: nil, head: head))
    #expect(try await stores[3].logOut()?.cursor == head.next)
    _ = try await cluster.psql("UPDATE session SET is_logged_in = true", schema: schema)
    #expect(
      try stores[3].history(from: .beginning, limit: 10).map(\.cursor.value) == [
        head.value + 1, head.value + 2,
      ])
  }

  @Test func nobodyMovesTheHeadOrWritesTheFeedByHand() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "app"))
    try await store.logIn(as: "a")
    _ = try await cluster.psql("UPDATE session SET username = 'b'", schema: store.requirePostgres().schema)
    for sql in [
      "UPDATE session SET head = 100, username = 'c'", "UPDATE session_writer SET head = 100",
      "UPDATE session_writer SET head = 100, origin = 'x'",
    ] {
      await #expect(throws: (any Error).self, "\(sql)") {
        try await cluster.psql(sql, schema: store.requirePostgres().schema)
      }
    }
    #expect(try store.bounds().head == Cursor(2), "the trigger numbers changes; the head cannot be set")
    await #expect(throws: (any Error).self) {
      try await cluster.psql(
        "INSERT INTO session_changes VALUES (3, now(), 'x', NULL, 'c', false, true, now(), 1, false, true)",
        schema: store.requirePostgres().schema)
    }
    await #expect(throws: (any Error).self) {
      try await cluster.psql(
        "UPDATE session_changes SET origin = 'forged'", schema: store.requirePostgres().schema)
    }
    for sql in [
      "DELETE FROM session", "INSERT INTO session (id) VALUES (2)", "DELETE FROM session_writer",
      "INSERT INTO session_writer (id) VALUES (2)",
    ] {
      await #expect(throws: (any Error).self, "\(sql)") {
        try await cluster.psql(sql, schema: store.requirePostgres().schema)
      }
    }
    #expect(try store.history(from: .beginning, limit: 10).map(\.origin) == ["app", "external"])
  }
}
