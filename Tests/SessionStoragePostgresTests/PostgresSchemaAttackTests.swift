import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// What a DBA or a database user can do to a store's schema with `psql`: rename it, shadow
/// its tables with temporary ones, write the feed from a trigger of their own, upgrade it
/// from the first migration. A write lands only in its own store's feed, or is refused.
@Suite(.timeLimit(.minutes(10))) struct PostgresSchemaAttackTests {
  /// `ALTER SCHEMA … RENAME`, then a new store under the old name: the renamed store is
  /// refused (its functions still search the old name), psql's writes to it are refused,
  /// and nothing reaches the new store's feed.
  @Test func aRenamedSchemaIsRefusedAndItsWritesReachNoOtherStore() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let first = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    try await first.logIn(as: "alice")
    let schema = try first.requirePostgres().schema
    let renamed = schema + "_2025"
    try await cluster.query("ALTER SCHEMA \(schema) RENAME TO \(renamed)")
    try await withCleanup {
      let renamedURL = url.replacingOccurrences(of: "schema=\(schema)", with: "schema=\(renamed)")

      for missingOrNew in ["no store under the old name", "a new store under the old name"] {
        if missingOrNew.hasPrefix("a new") {
          _ = try SessionStore(postgresURL: url, options: .init(origin: "new"))
        }
        let error = #expect(throws: SessionStorageError.self, "\(missingOrNew)") {
          try SessionStore(postgresURL: renamedURL, options: .init(origin: "late"))
        }
        #expect(error?.code == .tamperedSchema, "\(missingOrNew)")
        #expect(error?.message.contains("renamed from \(schema)") == true, "\(String(describing: error))")
        await #expect(
          throws: (any Error).self, "psql's write to the renamed schema is refused (\(missingOrNew))"
        ) {
          try await cluster.psql("UPDATE session SET username = 'mallory'", schema: renamed)
        }
      }
      #expect(try await cluster.psql("SELECT username, head FROM session", schema: renamed) == "alice|1\n")
      let newStore = try SessionStore(postgresURL: url, options: .init(origin: "new"))
      #expect(try newStore.bounds() == FeedBounds(oldest: nil, head: .zero), "nothing reached the new store")
      // The new store works on its own.
      #expect(try await newStore.logIn(as: "bob")?.cursor == Cursor(1))
      #expect(try await cluster.psql("SELECT username, head FROM session", schema: renamed) == "alice|1\n")
    } cleanup: {
      _ = try? await cluster.query("DROP SCHEMA IF EXISTS \(renamed) CASCADE")
    }
  }

  /// A temporary table named `session_changes` in a psql session that updates the session:
  /// the feed row still goes into the store's feed, and a subscriber receives it.
  @Test func aTemporaryTableDoesNotTakeTheFeedsRows() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let first = try #require(try await store.logIn(as: "alice"))
    let changes = try store.changes(from: .after(first.cursor))
    try await cluster.query(
      """
      CREATE TEMP TABLE session_changes AS SELECT * FROM \(store.requirePostgres().schema).session_changes;
      CREATE TEMP TABLE session AS SELECT * FROM \(store.requirePostgres().schema).session;
      UPDATE \(store.requirePostgres().schema).session SET username = 'bob';
      """)
    try #require(
      try store.history().map(\.cursor) == [Cursor(1), Cursor(2)], "the row is in the store's feed")
    let received = try await firstEntries(1, of: changes)
    #expect(received.map(\.cursor) == [Cursor(2)])
    #expect(received.first?.after.username == "bob")
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
  }

  /// Feed rows come only from the store's own trigger: a trigger of a temporary table, a
  /// function called `session_feed` in another schema, or the store's own function attached
  /// to another table cannot write one, however deep in triggers it runs.
  @Test(arguments: ForgedFeed.allCases)
  func theFeedCannotBeWrittenByAnotherTrigger(_ forgery: ForgedFeed) async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let first = try #require(try await store.logIn(as: "alice"))
    try await withCleanup {
      await #expect(throws: (any Error).self, "\(forgery) is refused") {
        try await cluster.psql(forgery.sql(schema: store.requirePostgres().schema))
      }
      #expect(try store.history() == [first], "no forged row")
      #expect(try store.bounds().head == first.cursor)
      // Later writes are not in the way of a forged row.
      #expect(try await store.rename(to: "bob")?.cursor == first.cursor.next)
      _ = try await cluster.psql(
        "UPDATE session SET username = 'carol'", schema: store.requirePostgres().schema)
      #expect(try store.history().map(\.origin) == ["desk", "desk", "external"])
    } cleanup: {
      _ = try? await cluster.query(
        "DROP SCHEMA IF EXISTS lookalike_\(store.requirePostgres().schema) CASCADE")
    }
  }

  /// A schema made by the first migration (by an older build, functions and all) is
  /// upgraded on its next open: its history is kept, and its functions then search
  /// `pg_temp` last.
  @Test func aSchemaOfTheFirstMigrationIsUpgradedAndKeepsItsHistory() async throws {
    let cluster = try await PostgresCluster.shared()
    let reference = try SessionStore(postgresURL: cluster.freshStoreURL())
    let first = try #require(reference.appliedMigrations.first)
    let url = cluster.freshStoreURL()
    let schema = try #require(url.components(separatedBy: "schema=").last)
    // As an older build made it: 0001 run with search_path set to the schema alone.
    try await cluster.query(
      "CREATE SCHEMA \(schema); SET search_path TO \(schema);\n" + Self.firstMigrationSQL() + "\n"
        + """
        CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
          checksum text NOT NULL, applied_at timestamptz NOT NULL);
        INSERT INTO schema_migrations VALUES (1, '\(first.name)', '\(first.checksum)', now());
        UPDATE session SET username = 'alice', is_logged_in = true;
        """)
    #expect(
      try await cluster.psql(
        "SELECT array_to_string(proconfig, '') FROM pg_proc WHERE proname = 'session_feed' "
          + "AND pronamespace = '\(schema)'::regnamespace") == "search_path=\(schema)\n")
    let readOnly = #expect(throws: SessionStorageError.self) {
      try SessionStore(postgresURL: url, options: .init(readOnly: true))
    }
    #expect(readOnly?.code == .needsMigration)

    let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    #expect(store.appliedMigrations.map(\.version) == Array(2...reference.appliedMigrations.count))
    #expect(try store.history().map(\.origin) == ["external"])
    #expect(try await store.rename(to: "bob")?.cursor == Cursor(2))
    #expect(
      try await cluster.psql(
        "SELECT DISTINCT array_to_string(proconfig, '') FROM pg_proc "
          + "WHERE pronamespace = '\(schema)'::regnamespace") == "search_path=\(schema), pg_temp\n")
    #expect(try store.check().allSatisfy { $0.verdict == .passed })
    #expect(try SessionStore(postgresURL: url).appliedMigrations.isEmpty)
  }

  /// `migrations/postgres/0001_session_and_feed.sql`, read from the package.
  static func firstMigrationSQL() throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return try String(
      contentsOf: root.appendingPathComponent("migrations/postgres/0001_session_and_feed.sql"),
      encoding: .utf8)
  }
}

/// The ways to write a feed row from outside the store's own trigger.
enum ForgedFeed: String, CaseIterable, CustomTestStringConvertible, Sendable {
  /// A temporary table whose trigger inserts `head + 1` with an origin of its choosing.
  case temporaryTablesTrigger
  /// A function called `session_feed` in another schema, with the store's INSERT, word
  /// for word, as a trigger of a temporary table.
  case lookalikeFunction
  /// The same look-alike with a search path of its own that reaches the store's schema: in
  /// the server's messages it is named as the store's own function is.
  case lookalikeFunctionSearchingTheStore
  /// The store's own `session_feed` attached to a temporary table that looks like
  /// `session_writer`.
  case storesFunctionOnAnotherTable
  /// A trigger of a temporary table that hands the store's own `session_feed` an entry no
  /// change of the roster made, through `session_writer.entry`.
  case entryThroughTheWriter
  /// In one transaction, the head's entry deleted (as compaction may) and a forged one
  /// written at its cursor by a trigger of a temporary table.
  case rowAtACompactedCursor
  /// In one transaction, a forged row at the next cursor by a trigger of a temporary table,
  /// then a real change of the session, which would take that cursor.
  case rowBeforeARealChange

  var testDescription: String { rawValue }

  /// The psql script of the attack on `schema`.
  func sql(schema: String) -> String {
    let insert =
      "INSERT INTO session_changes (seq, at, origin, old_username, new_username, old_is_logged_in, "
      + "new_is_logged_in, old_updated_at, account_id, was_active, is_active) VALUES (NEW.head, now_ms, who, "
      + "OLD.username, NEW.username, OLD.is_logged_in, NEW.is_logged_in, OLD.updated_at, 1, true, true)"
    switch self {
    case .temporaryTablesTrigger:
      return """
        CREATE TEMP TABLE t (x int);
        CREATE FUNCTION pg_temp.forge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          INSERT INTO \(schema).session_changes (seq, at, origin, old_username, new_username, old_is_logged_in,
            new_is_logged_in, old_updated_at, account_id, was_active, is_active)
          SELECT head + 1, now(), 'forged', username, 'eve', true, true, now(), 1, true, true FROM \(schema).session;
          RETURN NEW; END $$;
        CREATE TRIGGER forge BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION pg_temp.forge();
        INSERT INTO t VALUES (1);
        """
    case .lookalikeFunction, .lookalikeFunctionSearchingTheStore:
      let other = "lookalike_" + schema
      let path = self == .lookalikeFunction ? "" : "SET search_path = \(other), \(schema) "
      return """
        CREATE SCHEMA \(other);
        CREATE FUNCTION \(other).session_feed() RETURNS trigger LANGUAGE plpgsql \(path)AS $$
        DECLARE now_ms timestamptz := now(); who text := 'forged';
        BEGIN NEW.head := NEW.head + 1;
        \(insert);
        RETURN NEW; END $$;
        CREATE TEMP TABLE t (head bigint, username text, is_logged_in boolean, updated_at timestamptz);
        INSERT INTO t SELECT head, username, is_logged_in, updated_at FROM \(schema).session;
        CREATE TRIGGER forge BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION \(other).session_feed();
        SET search_path TO \(schema), \(other);
        UPDATE t SET username = 'eve';
        """
    case .storesFunctionOnAnotherTable:
      return """
        CREATE TEMP TABLE t AS SELECT * FROM \(schema).session_writer;
        CREATE TRIGGER forge BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION \(schema).session_feed();
        CREATE TEMP TABLE u (x int);
        CREATE FUNCTION pg_temp.nest() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          UPDATE t SET origin = 'forged', entry = jsonb_build_object('at', now(), 'account', 1,
            'old_username', 'alice', 'new_username', 'eve', 'old_is_logged_in', true, 'new_is_logged_in', true,
            'old_updated_at', now(), 'was_active', true, 'is_active', true);
          RETURN NEW; END $$;
        CREATE TRIGGER nest BEFORE INSERT ON u FOR EACH ROW EXECUTE FUNCTION pg_temp.nest();
        INSERT INTO u VALUES (1);
        """
    case .entryThroughTheWriter:
      return """
        CREATE TEMP TABLE t (x int);
        CREATE FUNCTION pg_temp.forge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          UPDATE \(schema).session_writer SET entry = jsonb_build_object('at', now(), 'account', 1,
            'old_username', 'alice', 'new_username', 'eve', 'old_is_logged_in', true, 'new_is_logged_in', true,
            'old_updated_at', now(), 'was_active', true, 'is_active', true);
          RETURN NEW; END $$;
        CREATE TRIGGER forge BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION pg_temp.forge();
        INSERT INTO t VALUES (1);
        """
    case .rowAtACompactedCursor, .rowBeforeARealChange:
      let (seq, before, after) =
        self == .rowAtACompactedCursor
        ? (
          "head",
          "DELETE FROM \(schema).session_changes WHERE seq = (SELECT head FROM \(schema).session_writer);",
          ""
        )
        : ("head + 1", "", "UPDATE \(schema).session SET username = 'eve';")
      return """
        CREATE TEMP TABLE t (x int);
        CREATE FUNCTION pg_temp.forge() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
          INSERT INTO \(schema).session_changes (seq, at, origin, old_username, new_username, old_is_logged_in,
            new_is_logged_in, old_updated_at, account_id, was_active, is_active)
          SELECT \(seq), now(), 'forged', username, 'eve', true, true, now(), 1, true, true FROM \(schema).session;
          RETURN NEW; END $$;
        CREATE TRIGGER forge BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION pg_temp.forge();
        BEGIN;
        \(before)
        INSERT INTO t VALUES (1);
        \(after)
        COMMIT;
        """
    }
  }
}

/// The first `count` entries of a subscription.
private func firstEntries(_ count: Int, of subscription: SessionSubscription) async throws -> [SessionEntry] {
  var entries: [SessionEntry] = []
  for try await entry in subscription {
    entries.append(entry)
    if entries.count == count { break }
  }
  return entries
}
