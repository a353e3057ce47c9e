import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// The `LISTEN` connection: it runs while anyone subscribes, over TCP or the Unix socket.
@Suite(.timeLimit(.minutes(10))) struct SubscriptionTests {
  @Test func storesOverTheSocketAndOverTCPShareOneFeed() async throws {
    let cluster = try await PostgresCluster.shared()
    let socketURL = cluster.freshStoreURL(socket: true)
    let local = try SessionStore(postgresURL: socketURL, options: .init(origin: "local"))
    let schema = try local.requirePostgres().schema
    let remote = try SessionStore(
      postgresURL: cluster.clientURL() + "&schema=" + schema,
      options: .init(origin: "remote", safetyPollInterval: .seconds(30)))
    let start = try remote.snapshotAndChanges()
    try await local.logIn(as: "alice")
    try await local.logOut()
    var received: [SessionEntry] = []
    for try await entry in start.changes {
      received.append(entry)
      if received.count == 2 { break }
    }
    #expect(received.map(\.origin) == ["local", "local"])
    #expect(received.map(\.cursor.value) == [1, 2])
    #expect(received == (try local.history()))
  }

  @Test func theListenConnectionRunsOnlyWhileSomeoneSubscribes() async throws {
    let cluster = try await PostgresCluster.shared()
    let origin = "listen-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: origin))
    let listening = {
      try await cluster.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(origin)/listener'")
    }
    #expect(try await listening() == "0\n")
    var subscriptions = [try store.changes(from: .now)]
    #expect(try await eventually { try await listening() == "1\n" }, "the first subscriber started it")
    subscriptions.append(try store.changes(from: .now))
    #expect(try await listening() == "1\n", "one connection per store, whatever the number of subscribers")
    subscriptions.removeFirst()
    #expect(try await listening() == "1\n", "the second subscriber still listens")
    subscriptions.removeAll()
    #expect(try await eventually { try await listening() == "0\n" }, "the last subscriber stopped it")
    #expect(try store.state.username == nil)
  }
}
