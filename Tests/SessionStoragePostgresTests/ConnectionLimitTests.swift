import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// A role whose `CONNECTION LIMIT` is below what a store needs can never open one: that is
/// `refused` (not worth retrying), saying what to change, not `unavailable`.
@Suite(.timeLimit(.minutes(10))) struct ConnectionLimitTests {
  @Test func aRoleLimitedToOneConnectionIsRefusedAndToldWhatAStoreNeeds() async throws {
    let cluster = try await PostgresCluster.shared()
    let role = uniqueName("limited")
    let url = cluster.freshStoreURL() + "&user=\(role)"
    try await cluster.query(
      "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 1; GRANT CREATE ON DATABASE postgres TO \(role)")
    try await withCleanup {
      let error = #expect(throws: SessionStorageError.self) {
        try SessionStore(postgresURL: url, options: .init(origin: "limited"))
      }
      #expect(error?.code == .refused, "\(String(describing: error))")
      #expect(error?.message.contains("CONNECTION LIMIT 1") == true, "\(String(describing: error))")
      #expect(error?.message.contains("CONNECTION LIMIT 3") == true, "\(String(describing: error))")
    } cleanup: {
      _ = try? await cluster.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'; "
          + "DROP OWNED BY \(role) CASCADE; DROP ROLE IF EXISTS \(role)")
    }
  }
}
