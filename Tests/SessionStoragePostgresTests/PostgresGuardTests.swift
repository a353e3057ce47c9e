import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// The feed's guards and `check` on servers and tables as operators leave them: a server
/// that speaks another language, a table that inherits from the feed, tables switched to
/// `UNLOGGED`, and a verification that cannot run.
@Suite(.timeLimit(.minutes(10))) struct PostgresGuardTests {
  /// A database whose `lc_messages` is not English (as `initdb --locale=de_DE.UTF-8` leaves
  /// it): the library's writes and psql's go through, with their origins, and `check` passes.
  @Test func writesGoThroughWhenTheServerSpeaksAnotherLanguage() async throws {
    let cluster = try await PostgresCluster.shared()
    try await withLocalizedDatabase(on: cluster) { url, locale, psql in
      let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
      #expect(try await psql("SHOW lc_messages") == locale + "\n")
      #expect(try await store.logIn(as: "alice")?.cursor == Cursor(1))
      #expect(try await store.rename(to: "bob")?.cursor == Cursor(2))
      _ = try await psql(
        "SET search_path TO \(store.requirePostgres().schema); UPDATE session SET username = 'carol'")
      #expect(try store.history().map(\.origin) == ["desk", "desk", "external"])
      #expect(try store.state.username == "carol")
      let failed = try store.check().filter { $0.verdict != .passed }
      #expect(failed.isEmpty, "\(failed)")
      // The guard still refuses a row typed in by hand, in the server's language.
      await #expect(throws: (any Error).self) {
        try await psql(
          "INSERT INTO \(store.requirePostgres().schema).session_changes VALUES (4, now(), 'forged', 'carol', 'eve', false, false, now(), 1, true, true)"
        )
      }
      #expect(try store.bounds().head == Cursor(3))
    }
  }

  /// A table that inherits from the feed takes rows that pass none of the feed's triggers:
  /// the store reads none of them, `check` names the table, a writable open is refused, and
  /// once it is detached the store opens again with its history as it was.
  @Test func aTableInheritingFromTheFeedAddsNoEntryAndIsRefused() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    let first = try #require(try await store.logIn(as: "alice"))
    let schema = try store.requirePostgres().schema
    let other = "lookalike_" + schema
    try await withCleanup {
      try await cluster.query(
        """
        CREATE SCHEMA \(other);
        CREATE TABLE \(other).kid () INHERITS (\(schema).session_changes);
        INSERT INTO \(other).kid VALUES (2, now(), 'forged', 'alice', 'eve', true, true, now(), 1, true, true);
        """)
      #expect(try store.history() == [first], "the child's row is no entry")
      #expect(try store.bounds() == FeedBounds(oldest: first.cursor, head: first.cursor))
      let schemaCheck = try #require(try store.check().first { $0.check == .schema })
      #expect(schemaCheck.verdict == .failed)
      #expect(
        schemaCheck.detail.contains("table session_changes is inherited by \(other).kid"), "\(schemaCheck)")
      let refused = #expect(throws: SessionStorageError.self) {
        try SessionStore(postgresURL: url, options: .init(origin: "late"))
      }
      #expect(refused?.code == .tamperedSchema)
      #expect(refused?.message.contains("NO INHERIT") == true, "\(String(describing: refused))")
      // The store opened before writes its own entry at the next cursor.
      #expect(try await store.rename(to: "bob")?.cursor == first.cursor.next)

      try await cluster.query("ALTER TABLE \(other).kid NO INHERIT \(schema).session_changes")
      let reopened = try SessionStore(postgresURL: url, options: .init(origin: "late"))
      #expect(try reopened.history().map(\.origin) == ["desk", "desk"])
      #expect(try reopened.check().allSatisfy { $0.verdict == .passed })
    } cleanup: {
      _ = try? await cluster.query("DROP SCHEMA IF EXISTS \(other) CASCADE")
    }
  }

  /// Tables switched to `UNLOGGED` lose acknowledged writes in a crash: `check` names each
  /// one, a writable open is refused with the SQL that repairs it, and that SQL works.
  @Test func unloggedTablesAreRefusedWithTheirRepair() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    try await store.logIn(as: "alice")
    let schema = try store.requirePostgres().schema
    try await cluster.query(
      "ALTER TABLE session_writer SET UNLOGGED; ALTER TABLE session_changes SET UNLOGGED", schema: schema)

    let schemaCheck = try #require(try store.check().first { $0.check == .schema })
    #expect(schemaCheck.verdict == .failed)
    for table in ["session_writer", "session_changes"] {
      #expect(schemaCheck.detail.contains("table \(table) is UNLOGGED"), "\(schemaCheck)")
    }
    let refused = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(origin: "late"))
    }
    #expect(refused?.code == .tamperedSchema)
    let repairs = ["session_writer", "session_changes"].map { "ALTER TABLE \"\(schema)\".\($0) SET LOGGED" }
    for repair in repairs {
      #expect(refused?.message.contains(repair) == true, "\(String(describing: refused))")
    }
    try await cluster.query(repairs.joined(separator: "; "))
    let repaired = try SessionStore(postgresURL: url, options: .init(origin: "late"))
    #expect(try repaired.state.username == "alice")
    #expect(try repaired.check().allSatisfy { $0.verdict == .passed })
  }

  /// A store opened before its tables were switched to `UNLOGGED` gets no acknowledgement
  /// for a change that a crash would take: its write, and psql's, are refused while they are
  /// unlogged. After an immediate shutdown has emptied them, an open says so instead of
  /// writing nothing.
  @Test func noChangeIsAcknowledgedIntoAnUnloggedTable() async throws {
    try await PostgresCluster.withPrivateCluster { cluster in
      let url = cluster.freshStoreURL()
      let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
      let first = try #require(try await store.logIn(as: "alice"))
      let schema = try store.requirePostgres().schema
      try await cluster.query("ALTER TABLE session_writer SET UNLOGGED", schema: schema)

      let refused = await #expect(throws: SessionStorageError.self) { try await store.rename(to: "bob") }
      #expect(refused?.code == .tamperedSchema)
      #expect(
        refused?.message.contains("UNLOGGED table(s) of the store: session_writer") == true,
        "\(String(describing: refused))")
      await #expect(throws: (any Error).self, "psql's change is refused as well") {
        try await cluster.query("UPDATE session SET username = 'carol'", schema: schema)
      }
      #expect(try store.bounds().head == first.cursor)

      try await cluster.restart(immediate: true)
      let afterCrash = #expect(throws: SessionStorageError.self) {
        try SessionStore(postgresURL: url, options: .init(origin: "late"))
      }
      #expect(afterCrash?.code == .tamperedSchema)
      #expect(afterCrash?.message.contains("SET LOGGED") == true, "\(String(describing: afterCrash))")
      try await cluster.query("ALTER TABLE \"\(schema)\".session_writer SET LOGGED")
      let emptied = #expect(throws: SessionStorageError.self) {
        try SessionStore(postgresURL: url, options: .init(origin: "late"))
      }
      #expect(emptied?.code == .tamperedSchema)
      #expect(
        emptied?.message.contains("the session_writer table holds no row") == true,
        "\(String(describing: emptied))")
    }
  }

  /// A verification the server fails (its table lost a column) fails on its own: every
  /// other one still runs and reports its own result, not "current transaction is aborted".
  @Test func aVerificationThatCannotRunLeavesTheOthersTheirResults() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    try await store.logIn(as: "alice")
    try await cluster.query(
      "ALTER TABLE schema_migrations RENAME COLUMN checksum TO sum", schema: store.requirePostgres().schema)

    let results = try store.check()
    let migrations = try #require(results.first { $0.check == .migrations })
    #expect(migrations.verdict == .failed)
    #expect(migrations.detail.contains("could not check"), "\(migrations)")
    for result in results where result.check != .migrations {
      #expect(!result.detail.contains("aborted"), "\(result)")
      #expect(result.verdict == .passed, "\(result)")
    }
    #expect(results.map(\.check).contains(.username))
  }
}

/// Candidates for a server language other than English, tried in order: the first locale
/// the server accepts for `lc_messages` is used.
private let translatedLocales = ["de_DE.UTF-8", "fr_FR.UTF-8", "es_ES.UTF-8", "ja_JP.UTF-8", "de_DE.utf8"]

/// Runs `body` with the URL of a fresh store in a new database whose `lc_messages` is a
/// language other than English, that locale, and a psql runner on that database; drops the
/// database afterwards. Without such a locale on the server's machine (Debian:
/// `locales-all`), the test is skipped, and fails in CI.
private func withLocalizedDatabase(
  on cluster: PostgresCluster, _ body: (String, String, (String) async throws -> String) async throws -> Void
) async throws {
  var chosen: String?
  for locale in translatedLocales where chosen == nil {
    if (try? await cluster.query("SET lc_messages = '\(locale)'")) != nil { chosen = locale }
  }
  guard let locale = chosen else {
    let reason = "the server accepts none of \(translatedLocales) for lc_messages (install locales-all)"
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    if !ci.isEmpty && ci != "false" && ci != "0" { throw TestFailure(reason) }
    try Test.cancel(Comment(rawValue: reason))
  }
  let database = uniqueName("lang")
  try await cluster.query("CREATE DATABASE \(database)")
  try await withCleanup {
    try await cluster.query("ALTER DATABASE \(database) SET lc_messages = '\(locale)'")
    // The cluster's URL with the new database as its path.
    let (base, query) =
      cluster.url.firstIndex(of: "?").map { (cluster.url[..<$0], cluster.url[$0...].dropFirst()) }
      ?? (cluster.url[...], "")
    let server = base[...(base.lastIndex(of: "/") ?? base.startIndex)]
    let url = server + database + "?" + (query.isEmpty ? "" : query + "&") + "schema=" + uniqueName("t")
    try await body(url, locale) { sql in try await cluster.query("\\connect \(database)\n" + sql) }
  } cleanup: {
    _ = try? await cluster.query("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
  }
}

/// A test's own failure, with its reason.
private struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
