import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// A lock on the feed that outlasts the store's lock timeout (a `VACUUM FULL` queued behind
/// a long reader, a `LOCK TABLE`) makes a subscriber's reads fail with `busy`: the subscriber
/// reads again later, it does not end.
@Suite(.timeLimit(.minutes(10))) struct FeedLockTests {
  @Test func aSubscriberWaitsOutALockOnTheFeedHeldPastTheLockTimeout() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let schema = try #require(url.components(separatedBy: "schema=").last)
    let options = SessionStore.PostgresOptions(
      origin: "locked", safetyPollInterval: .milliseconds(100), lockTimeout: .milliseconds(200))
    let store = try SessionStore(postgresURL: url, options: options)
    _ = try await store.logIn(as: "alice")
    let subscription = try store.changes(from: .beginning)
    async let received = first(2, of: subscription, within: .seconds(120))
    // Held for 3 s: about 15 safety polls whose reads wait 200 ms each and fail.
    _ = try await cluster.query(
      "BEGIN; LOCK TABLE \(schema).session_changes IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;")
    _ = try await store.logOut()
    do {
      #expect(try await received.map(\.change.after.isLoggedIn) == [true, false])
    } catch {
      Issue.record("the subscription ended: \(error)")
    }
  }
}
