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
}
