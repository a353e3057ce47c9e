import Foundation
import TestSupport
import Testing

/// `sessionctl` behind a real PgBouncer (`PgBouncer`) in front of the suite's server.
@Suite(.timeLimit(.minutes(10))) struct PgBouncerCommandTests {
  /// PgBouncer's refusals (SQLSTATE 08P01) of a wrong password or an unknown user exit 77,
  /// "refused", not 69, "worth retrying"; the line names the pooler and hides the password.
  @Test func aLoginThePoolerRefusesExits77() async throws {
    let server = try await PostgresCluster.shared()
    let bouncer = try await PgBouncer(poolMode: "session", serverURL: server.url)
    let sandbox = try Sandbox()
    let good = bouncer.url(query: "schema=s")
    for url in [
      good.replacingOccurrences(of: PgBouncer.password, with: "Tr0ub4dor"),
      bouncer.url(user: "ghost", query: "schema=s").replacingOccurrences(
        of: PgBouncer.password, with: "Tr0ub4dor"),
    ] {
      let outcome = try await sandbox.run(db: url, ["status"])
      #expect(outcome.status == 77, "\(outcome)")
      #expect(outcome.stderr.contains("pooler") && outcome.stderr.contains("08P01"), "\(outcome)")
      #expect(!outcome.stderr.contains("Tr0ub4dor"), "\(outcome)")
      #expect(outcome.stderr.split(separator: "\n").count == 1, "one line: \(outcome)")
    }
  }

  /// Behind PgBouncer in transaction pooling, `login`, `status` and `watch` work, and leave
  /// the pool's one server connection as a direct session finds a server: another client of
  /// the pool is not made read-only nor pointed at the store's schema.
  @Test func commandsThroughATransactionPoolerLeaveOtherClientsTheirDefaults() async throws {
    let server = try await PostgresCluster.shared()
    let bouncer = try await PgBouncer(
      poolMode: "transaction", serverURL: server.url, settings: ["default_pool_size": "1"])
    let sandbox = try Sandbox()
    let url = bouncer.url(query: "schema=t_\(UInt32.random(in: 0...UInt32.max))")
    #expect(try await sandbox.run(db: url, ["login", "alice"]).status == 0)
    let status = try await sandbox.run(db: url, ["status"])
    #expect(status.status == 0 && status.stdout.contains("alice"), "\(status)")
    let watched = try await sandbox.run(db: url, ["watch", "--limit", "0"])
    #expect(watched.status == 0, "\(watched)")
    #expect(try await sandbox.run(db: url, ["logout"]).status == 0)
    let probe = """
      SHOW search_path; SHOW default_transaction_read_only; SHOW lock_timeout; SHOW TimeZone;
      SELECT count(*) FROM pg_prepared_statements;
      """
    #expect(try await PostgresCluster(url: bouncer.url()).psql(probe) == (try await server.psql(probe)))
  }
}
