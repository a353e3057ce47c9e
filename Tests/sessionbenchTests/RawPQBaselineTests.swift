import Foundation
import SessionStorage
import TestSupport
import Testing

@testable import SessionStoragePostgres
@testable import sessionbench

/// The PostgreSQL baselines do the store's work: the same writes through a store on one schema
/// and through ``RawPQWriter`` on another leave the same rows (times aside, which the
/// triggers stamp), the store finds nothing wrong with the raw schema, and the raw side runs
/// the store's own SQL. A baseline that skips a statement (no request to make the account
/// active, the wrong account) fails here, where a benchmark would only have looked faster.
@Suite(.timeLimit(.minutes(10))) struct RawPQBaselineTests {
  /// What a schema holds, every column but the times and the write token: the roster, the
  /// active account, the change-numbering row at rest, and the feed.
  static func contents(_ server: String, schema: String) throws -> [String] {
    let connection = try RawPQ(url: server, schema: schema)
    return try connection.rows(
      "SELECT 'account', id, username, is_logged_in, seq FROM ONLY accounts ORDER BY id")
      + connection.rows("SELECT 'active', account_id FROM ONLY active_account")
      + connection.rows(
        "SELECT 'writer', head, last_account_id, origin, activates, entry FROM ONLY session_writer")
      + connection.rows(
        "SELECT 'change', seq, origin, account_id, old_username, new_username, old_is_logged_in, "
          + "new_is_logged_in, was_active, is_active FROM ONLY session_changes ORDER BY seq")
  }

  /// The verifications of `SessionStore.check()` that fail on `schema`.
  static func failedChecks(_ server: String, schema: String) throws -> [String] {
    try SessionStore(
      postgresURL: PostgresSchemas.url(server, schema: schema), options: .init(origin: "sessionbench")
    ).check()
      .filter { $0.verdict != .passed }.map { "\($0.check): \($0.detail)" }
  }

  /// Two schemas made by the store, with `accounts` in the roster as the `pg-*` scenarios
  /// make it: each write through the store and through the raw writer reports the same
  /// cursor (or none), and both schemas end with the same rows.
  @Test(arguments: [1, 100])
  func theRawPQWriterLeavesWhatTheStoreWrites(accounts: Int) async throws {
    let cluster = try await PostgresCluster.shared()
    let schemas = try PostgresSchemas(server: cluster.clientURL())
    let store = try schemas.store()
    let raw = RawPQWriter(try schemas.rawConnection())
    try Roster.populate(store, raw, accounts: accounts)
    // Joins, logouts, a login of a signed-out account (active or not), a switch to a
    // signed-in one, no-ops.
    let other = accounts > 1 ? "user-002" : "bob"
    let writes: [String?] = [
      "alice", nil, "alice", other, nil, "alice", nil, nil, "alice", "alice", other, "alice",
    ]
    for (index, name) in writes.enumerated() {
      let ours = try name.map { try store.blocking.logIn(as: $0) } ?? store.blocking.logOut()
      let head = try raw.write(name)
      #expect(head == ours?.cursor.value, "write \(index) (\(name ?? "logout"))")
    }
    // The scenarios' alternating writes of alice.
    for index in 0..<4 {
      let ours = try index.isMultiple(of: 2) ? store.blocking.logIn(as: "alice") : store.blocking.logOut()
      #expect(
        try raw.write(login: index.isMultiple(of: 2)) == ours?.cursor.value, "alternating write \(index)")
    }

    let ours = try Self.contents(schemas.server, schema: schemas.ours)
    #expect(ours.count > accounts + 2 + writes.count)
    #expect(try Self.contents(schemas.server, schema: schemas.raw) == ours)
    for schema in [schemas.ours, schemas.raw] {
      #expect(try Self.failedChecks(schemas.server, schema: schema) == [], "\(schema)")
    }
    // The store reads the raw schema's feed as its own writes.
    let entries = try SessionStore(
      postgresURL: PostgresSchemas.url(schemas.server, schema: schemas.raw),
      options: .init(origin: "sessionbench")
    ).history(from: .beginning, limit: 1000)
    #expect(entries.count == ours.filter { $0.hasPrefix("change|") }.count)
    #expect(entries.allSatisfy { $0.origin == "sessionbench" })
  }

  /// The SQL the raw side spells out itself is the store's, character for character (the
  /// rest it takes from `PostgresWrite`).
  @Test func theRawSideRunsTheStoresSQL() {
    #expect(RawPQWriter.accountsSQL == PostgresWrite.accountsSQL)
    #expect(RawPQWriter.accountCountSQL == PostgresWrite.accountCountSQL)
    #expect(RawPQReads.snapshotSQL == PostgresTables.snapshotSQL)
    #expect(RawPQReads.pageSQL == PostgresTables.pageSQL)
  }
}
