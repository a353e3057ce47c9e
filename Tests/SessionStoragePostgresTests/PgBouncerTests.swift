import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
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
    let store = try PostgresSessionStore(url: url)
    _ = try await store.logIn(as: "alice")
    for wrong in [
      url.replacingOccurrences(of: PgBouncer.password, with: "wrong-password"),
      bouncer.url(user: "ghost", query: "schema=s"),
    ] {
      let error = #expect(throws: SessionStorageError.self) {
        try PostgresSessionStore(url: wrong, options: .init(readOnly: true))
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
      var options = PostgresSessionStore.Options(origin: "revoked", safetyPollInterval: .milliseconds(200))
      options.poolerRefusalGrace = .seconds(3)
      let store = try PostgresSessionStore(
        url: bouncer.url(database: database, query: "schema=s"), options: options)
      _ = try await store.logIn(as: "alice")
      let subscription = try store.changes(from: .beginning)
      let ended = Task { () async -> String in
        do {
          for try await _ in subscription {}
          return "ended without an error"
        } catch let error as SessionStorageError {
          return error.code == .refused ? "refused" : "\(error)"
        } catch {
          return "\(error)"
        }
      }
      try await Task.sleep(for: .milliseconds(500))  // the reader's first reads
      try bouncer.setUsers([("postgres", "another-password")])
      try await Task.sleep(for: .milliseconds(500))  // the reload
      _ = try await cluster.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()"
      )
      let outcome = await withTaskGroup(of: String.self) { group in
        group.addTask { await ended.value }
        group.addTask {
          try? await Task.sleep(for: .seconds(120))
          return "still running after 120 s"
        }
        let first = await group.next() ?? ""
        ended.cancel()
        group.cancelAll()
        return first
      }
      #expect(outcome == "refused")
      // Asked again every 5 s at most (each time twice: the second in libpq's verbose mode),
      // not several times a second.
      let refusals =
        bouncer.log.components(separatedBy: "closing because: password authentication failed").count - 1
      #expect(refusals <= 8, "\(refusals) refused logins:\n\(bouncer.log)")
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
    let options = PostgresSessionStore.Options(origin: "pooled", safetyPollInterval: .milliseconds(200))
    let store = try PostgresSessionStore(url: url, options: options)
    let subscription = try store.changes(from: .beginning)
    let received = Task { () async throws -> [SessionEntry] in
      var entries: [SessionEntry] = []
      for try await entry in subscription {
        entries.append(entry)
        if entries.count == 2 { break }
      }
      return entries
    }
    #expect(
      await eventually {
        if case .polling = subscription.wakeMode { return true }
        return false
      }, "\(subscription.wakeMode)")
    _ = try await store.logIn(as: "alice")
    _ = try await store.rename(to: "bob")
    #expect(try await received.value.map(\.change.after.username) == ["alice", "bob"])
    let reader = try PostgresSessionStore(url: url, options: .init(origin: "pooled-reader", readOnly: true))
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
