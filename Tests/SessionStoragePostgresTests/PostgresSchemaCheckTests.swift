import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// `check()` and opening a store verify what the schema's functions and triggers are (their
/// bodies, settings and firing modes), not only their names, and a write never returns a
/// cursor the feed has no entry for.
@Suite(.timeLimit(.minutes(10))) struct PostgresSchemaCheckTests {
  @Test(arguments: Tampering.allCases)
  func aSchemaChangedByHandIsFoundByCheckRefusedAtOpenAndWritesNoCursorWithoutEntry(_ tampering: Tampering)
    async throws
  {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    let early = try SessionStore(postgresURL: url, options: .init(origin: "early"))
    let first = try #require(try await early.logIn(as: "alice"))
    #expect(try early.check().allSatisfy { $0.verdict == .passed })
    _ = try await cluster.psql(
      tampering.sql(schema: early.requirePostgres().schema), schema: early.requirePostgres().schema)
    try await withCleanup {

      // check names it.
      let schemaCheck = try #require(try early.check().first { $0.check == .schema })
      #expect(schemaCheck.verdict == .failed, "\(tampering): \(schemaCheck.detail)")
      #expect(schemaCheck.detail.contains(tampering.finding), "\(tampering): \(schemaCheck.detail)")

      // Opening refuses it; a read-only store opens, reports it in check, and refuses reads.
      let refused = #expect(throws: SessionStorageError.self, "\(tampering)") {
        try SessionStore(postgresURL: url, options: .init(origin: "late"))
      }
      #expect(refused?.code == .tamperedSchema, "\(tampering)")
      #expect(refused?.message.contains(tampering.finding) == true, "\(String(describing: refused))")
      let reader = try SessionStore(postgresURL: url, options: .init(origin: "reader", readOnly: true))
      #expect(try reader.check().first { $0.check == .schema }?.verdict == .failed)
      let read = #expect(throws: SessionStorageError.self, "\(tampering)") { try reader.state }
      #expect(read?.code == .tamperedSchema)

      // A store opened before: its write is in the feed, or it is refused and changes nothing.
      do {
        let entry = try #require(try await early.rename(to: "bob"))
        #expect(!tampering.movesTheHeadWithoutAnEntry, "\(tampering): the write returned \(entry.cursor)")
        #expect(try early.history().last == entry, "\(tampering): the cursor returned has its entry")
      } catch let error as SessionStorageError {
        #expect(error.code == .tamperedSchema, "\(tampering): \(error)")
        #expect(try early.bounds().head == first.cursor, "\(tampering): nothing was written")
        #expect(try early.state.username == "alice")
      }
    } cleanup: {
      _ = try? await cluster.query("DROP SCHEMA IF EXISTS extra_\(early.requirePostgres().schema) CASCADE")
    }
  }
}

/// Changes to a store's schema that keep every name in place.
enum Tampering: String, CaseIterable, CustomTestStringConvertible, Sendable {
  /// `ENABLE REPLICA TRIGGER`: the feed's trigger no longer fires for anyone's writes.
  case replicaTrigger
  /// `ENABLE ALWAYS TRIGGER`: not the mode the migration made.
  case alwaysTrigger
  /// `session_feed` replaced by a function that does nothing.
  case emptyFeedFunction
  /// `session_feed` replaced by one that moves the head without writing a feed row.
  case headWithoutEntry
  /// The feed's guard replaced by one that drops every row (`RETURN NULL`).
  case swallowingGuard
  /// A rule that turns every insert into the feed into nothing.
  case swallowingRule
  /// Another trigger on the session_writer table.
  case addedTrigger
  /// Row-level security on the feed, which can hide rows from readers.
  case rowSecurity
  /// `session_feed` searching another schema.
  case otherSearchPath
  /// The session_writer table (the head) switched to `UNLOGGED`: emptied by the server after
  /// a crash.
  case unloggedSession
  /// The feed switched to `UNLOGGED`.
  case unloggedFeed
  /// A table of another schema that inherits from the feed: its rows pass none of the
  /// feed's triggers.
  case inheritedFeed
  /// The session_writer table inheriting from a table of another schema.
  case inheritingSession
  /// The feed's deferred check made an ordinary trigger, which fires before the head moved.
  case undeferredCheck

  var testDescription: String { rawValue }

  /// Whether a write through a store opened before returns a cursor the feed has no entry
  /// for, unless the store reads its entry back.
  var movesTheHeadWithoutAnEntry: Bool {
    [.headWithoutEntry, .swallowingGuard, .swallowingRule].contains(self)
  }

  /// What `check` and the refusal say.
  var finding: String {
    switch self {
    case .replicaTrigger: "trigger session_feed on session_writer fires only for replication"
    case .alwaysTrigger: "trigger session_feed on session_writer fires always"
    case .emptyFeedFunction, .headWithoutEntry: "function session_feed() is not the one of migration"
    case .swallowingGuard: "function session_changes_guard() is not the one of migration"
    case .swallowingRule: "table session_changes has rules"
    case .addedTrigger: "trigger extra on session_writer was added by hand"
    case .rowSecurity: "table session_changes has row-level security"
    case .otherSearchPath: "function session_feed() searches schema public"
    case .unloggedSession: "table session_writer is UNLOGGED"
    case .unloggedFeed: "table session_changes is UNLOGGED"
    case .inheritedFeed: "table session_changes is inherited by"
    case .inheritingSession: "table session_writer inherits from"
    case .undeferredCheck: "trigger session_changes_settled on session_changes does not fire"
    }
  }

  /// The psql script, run with `search_path` set to `schema`.
  func sql(schema: String) -> String {
    let header =
      "CREATE OR REPLACE FUNCTION session_feed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER "
      + "SET search_path = \(schema), pg_temp AS $$"
    switch self {
    case .replicaTrigger: return "ALTER TABLE session_writer ENABLE REPLICA TRIGGER session_feed;"
    case .alwaysTrigger: return "ALTER TABLE session_writer ENABLE ALWAYS TRIGGER session_feed;"
    case .emptyFeedFunction: return header + " BEGIN RETURN NEW; END $$;"
    case .headWithoutEntry:
      return header
        + """
         BEGIN
          IF NEW.entry IS NOT NULL THEN
            NEW.head := OLD.head + 1;
          ELSE
            NEW.head := OLD.head;
          END IF;
          NEW.entry := NULL;
          RETURN NEW;
        END $$;
        """
    case .swallowingGuard:
      return
        "CREATE OR REPLACE FUNCTION session_changes_guard() RETURNS trigger LANGUAGE plpgsql "
        + "SET search_path = \(schema), pg_temp AS $$ BEGIN RETURN NULL; END $$;"
    case .swallowingRule: return "CREATE RULE swallow AS ON INSERT TO session_changes DO INSTEAD NOTHING;"
    case .addedTrigger:
      return """
        CREATE SCHEMA extra_\(schema);
        CREATE FUNCTION extra_\(schema).extra() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
        CREATE TRIGGER extra BEFORE UPDATE ON session_writer FOR EACH ROW EXECUTE FUNCTION extra_\(schema).extra();
        """
    case .rowSecurity: return "ALTER TABLE session_changes ENABLE ROW LEVEL SECURITY;"
    case .otherSearchPath: return "ALTER FUNCTION session_feed() SET search_path = public, pg_temp;"
    case .unloggedSession: return "ALTER TABLE session_writer SET UNLOGGED;"
    case .unloggedFeed: return "ALTER TABLE session_changes SET UNLOGGED;"
    case .inheritedFeed:
      return """
        CREATE SCHEMA extra_\(schema);
        CREATE TABLE extra_\(schema).kept () INHERITS (session_changes);
        """
    case .inheritingSession:
      return """
        CREATE SCHEMA extra_\(schema);
        CREATE TABLE extra_\(schema).base ();
        ALTER TABLE session_writer INHERIT extra_\(schema).base;
        """
    case .undeferredCheck:
      return """
        DROP TRIGGER session_changes_settled ON session_changes;
        CREATE CONSTRAINT TRIGGER session_changes_settled AFTER INSERT ON session_changes
        FOR EACH ROW EXECUTE FUNCTION session_changes_guard();
        """
    }
  }
}
