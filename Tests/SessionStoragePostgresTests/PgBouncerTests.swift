import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import TestSupport
import Testing

/// A store behind PgBouncer, a real one started by the test (`PgBouncer`), in front of the
/// suite's server: its refusals, and what the store leaves on the pool's server connections.
@Suite(.timeLimit(.minutes(10))) struct PgBouncerTests {
  /// PgBouncer refuses a wrong password with SQLSTATE 08P01: that is `refused`, never
  /// `unavailable` (waiting does not cure it), and the message names the pooler.
  @Test func aWrongPasswordThroughPgBouncerIsRefusedNotUnavailable() async throws {
    let cluster = try await PostgresCluster.shared()
    let bouncer = try await PgBouncer(poolMode: "session", serverURL: cluster.url)
    let url = bouncer.url(query: "schema=\(uniqueName("t"))")
    let store = try SessionStore(postgresURL: url)
    _ = try await store.logIn(as: "alice")
    for wrong in [
      url.replacingOccurrences(of: PgBouncer.password, with: "wrong-password"),
      bouncer.url(user: "ghost", query: "schema=s"),
    ] {
      let error = #expect(throws: SessionStorageError.self) {
        try SessionStore(postgresURL: wrong, options: .init(readOnly: true))
      }
      #expect(error?.code == .refused, "\(String(describing: error))")
      #expect(error?.message.contains("08P01") == true, "\(String(describing: error))")
      #expect(error?.message.contains("pooler") == true, "\(String(describing: error))")
    }
  }

  /// A subscriber whose password is revoked at the pooler, its connections cut: it does not
  /// log in again and again for ever. It asks again every few seconds for a while (a server
  /// restarting behind PgBouncer is refused the same way), then ends with `refused`.
  @Test func aSubscriberWhosePasswordIsRevokedAtThePoolerEndsRefused() async throws {
    let cluster = try await PostgresCluster.shared()
    let database = uniqueName("bounced")
    try await cluster.query("CREATE DATABASE \(database)")
    try await withCleanup {
      let bouncer = try await PgBouncer(poolMode: "session", serverURL: cluster.url)
      var options = SessionStore.PostgresOptions(origin: "revoked", safetyPollInterval: .milliseconds(200))
      options.poolerRefusalGrace = .seconds(3)
      let store = try SessionStore(
        postgresURL: bouncer.url(database: database, query: "schema=s"), options: options)
      _ = try await store.logIn(as: "alice")
      let subscription = try store.changes(from: .beginning)
      let reads = Reads()
      // A child task of the test: the test's time limit ends it; so do 120 s.
      async let outcome = withTaskGroup(of: String.self) { group in
        group.addTask {
          do {
            for try await _ in subscription { reads.count.withLock { $0 += 1 } }
            return "ended without an error"
          } catch let error as SessionStorageError {
            return error.code == .refused ? "refused" : "\(error)"
          } catch {
            return "\(error)"
          }
        }
        group.addTask {
          try? await Task.sleep(for: .seconds(120))
          return "still running after 120 s"
        }
        defer { group.cancelAll() }
        return await group.next() ?? ""
      }
      try #require(await eventually { reads.count.withLock { $0 } >= 1 }, "the subscriber reads")
      try bouncer.setUsers([("postgres", "another-password")])
      // Reloaded once a login with the old password is refused.
      let old = PostgresCluster(url: bouncer.url(database: database))
      try #require(
        await eventually {
          do {
            try await old.psql("SELECT 1")
            return false
          } catch {
            return "\(error)".contains("password authentication failed")
          }
        }, "PgBouncer reloads its user list")
      let refusedBefore = refusals(in: bouncer.log)
      _ = try await cluster.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()"
      )
      #expect(await outcome == "refused")
      // Asked again every 5 s at most (each time twice: the second in libpq's verbose mode),
      // not several times a second.
      let refused = refusals(in: bouncer.log) - refusedBefore
      #expect(refused <= 8, "\(refused) refused logins:\n\(bouncer.log)")
    } cleanup: {
      _ = try? await cluster.query("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
    }
  }

  /// Through PgBouncer in transaction pooling, each transaction may run on another server
  /// connection, which then serves other clients. After a writable and a read-only store
  /// wrote, read and subscribed there, another client of the pool, on the pool's one server
  /// connection, sees the settings a direct session has: no `search_path`, read-only
  /// default or lock timeout of the store's, no prepared statement; and the store's
  /// subscriber, which cannot LISTEN there, polls and receives every change.
  @Test func throughATransactionPoolerTheStoreLeavesNothingOnThePoolsServerConnection() async throws {
    let cluster = try await PostgresCluster.shared()
    let bouncer = try await PgBouncer(
      poolMode: "transaction", serverURL: cluster.url, settings: ["default_pool_size": "1"])
    let url = bouncer.url(query: "schema=\(uniqueName("t"))")
    let options = SessionStore.PostgresOptions(origin: "pooled", safetyPollInterval: .milliseconds(200))
    let store = try SessionStore(postgresURL: url, options: options)
    let subscription = try store.changes(from: .beginning)
    async let received = first(2, of: subscription, within: .seconds(120))
    #expect(
      await eventually {
        if case .polling = subscription.wakeMode { return true }
        return false
      }, "\(subscription.wakeMode)")
    _ = try await store.logIn(as: "alice")
    _ = try await store.rename(to: "bob")
    #expect(try await received.map(\.change.after.username) == ["alice", "bob"])
    let reader = try SessionStore(postgresURL: url, options: .init(origin: "pooled-reader", readOnly: true))
    #expect(try reader.bounds().head.value == 2)

    let probe = """
      SHOW search_path; SHOW default_transaction_read_only; SHOW lock_timeout; SHOW statement_timeout;
      SHOW TimeZone; SHOW default_transaction_isolation; SELECT count(*) FROM pg_prepared_statements;
      SELECT count(*) FROM pg_listening_channels();
      """
    let pooled = try await PostgresCluster(url: bouncer.url()).psql(probe)
    let direct = try await cluster.psql(probe)
    #expect(pooled == direct)
  }
}

/// How many logins PgBouncer refused for a wrong password, by its log.
private func refusals(in log: String) -> Int {
  log.components(separatedBy: "closing because: password authentication failed").count - 1
}

/// How many entries a subscription delivered, counted by the task that follows it.
private final class Reads: Sendable {
  let count = Mutex(0)
}
