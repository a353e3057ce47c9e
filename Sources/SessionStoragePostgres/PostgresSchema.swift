import SessionStorage
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What a store verifies about its schema beyond the migration ledger: that its functions
/// and triggers are what the migrations made, not only that objects of those names exist.
///
/// - Each function's body (`prosrc`) is the one of the newest migration that defines it, it
///   runs as the migration says (`SECURITY DEFINER` or not), and its only setting is the
///   search path of the schema (`<schema>, pg_temp`, kept by `SET search_path FROM CURRENT`).
///   After `ALTER SCHEMA … RENAME` that path names the old name, a schema that is gone or
///   another store's: the message says the schema was renamed.
/// - Each table has exactly the migrations' triggers, each firing in the normal mode
///   (`tgenabled = 'O'`: not disabled, not `REPLICA` or `ALWAYS` only), on the migration's
///   events, with the migration's function, no `WHEN` condition, column list or arguments.
/// - The tables are plain tables, without row-level security (which could hide feed rows
///   from a reader) and without rules (which could swallow them); they are logged (an
///   `UNLOGGED` table is emptied after a crash, acknowledged changes with it), and they
///   neither inherit nor are inherited from (a child's rows pass none of its parent's
///   triggers). `session` is a view (of the active account) without rules of its own.
///
/// A writable open refuses a schema with any difference (`tamperedSchema`); a read-only one
/// keeps the refusal for every read but `check`, which reports it.
enum PostgresSchema {
  /// A function as the migrations define it.
  struct Function: Equatable {
    var name: String
    /// The text between `$$` and `$$`, which PostgreSQL keeps as `prosrc`.
    var body: String
    var securityDefiner: Bool
    /// The migration that defines it last.
    var migration: String
  }

  /// A trigger as the migrations define it.
  struct Trigger {
    var table: String
    var name: String
    var function: String
    /// `pg_trigger.tgtype`: 1 row, 2 before, 4 insert, 8 delete, 16 update, 32 truncate, 64 instead of.
    var type: Int
    var events: String
    /// A constraint trigger deferred to the end of the transaction (`DEFERRABLE INITIALLY
    /// DEFERRED`), rather than one that fires at its statement.
    var deferred = false
  }

  static let triggers = [
    Trigger(
      table: "accounts", name: "accounts_feed", function: "roster_feed", type: 1 | 2 | 4 | 8 | 16,
      events: "BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW"),
    Trigger(
      table: "accounts", name: "accounts_lock", function: "roster_lock", type: 2 | 4 | 8 | 16,
      events: "BEFORE INSERT OR UPDATE OR DELETE FOR EACH STATEMENT"),
    Trigger(
      table: "active_account", name: "active_account_lock", function: "roster_lock", type: 2 | 16,
      events: "BEFORE UPDATE FOR EACH STATEMENT"),
    Trigger(
      table: "accounts", name: "accounts_refuse_truncate", function: "session_refuse", type: 2 | 32,
      events: "BEFORE TRUNCATE FOR EACH STATEMENT"),
    Trigger(
      table: "active_account", name: "active_account_feed", function: "roster_feed", type: 1 | 2 | 16,
      events: "BEFORE UPDATE FOR EACH ROW"),
    Trigger(
      table: "active_account", name: "active_account_refuse", function: "session_refuse", type: 1 | 2 | 4 | 8,
      events: "BEFORE INSERT OR DELETE FOR EACH ROW"),
    Trigger(
      table: "active_account", name: "active_account_refuse_truncate", function: "session_refuse",
      type: 2 | 32,
      events: "BEFORE TRUNCATE FOR EACH STATEMENT"),
    Trigger(
      table: "session_writer", name: "session_feed", function: "session_feed", type: 1 | 2 | 16,
      events: "BEFORE UPDATE FOR EACH ROW"),
    Trigger(
      table: "session_writer", name: "session_writer_refuse", function: "session_refuse", type: 1 | 2 | 4 | 8,
      events: "BEFORE INSERT OR DELETE FOR EACH ROW"),
    Trigger(
      table: "session_writer", name: "session_writer_refuse_truncate", function: "session_refuse",
      type: 2 | 32,
      events: "BEFORE TRUNCATE FOR EACH STATEMENT"),
    Trigger(
      table: "session", name: "session_update", function: "session_update", type: 1 | 64 | 16,
      events: "INSTEAD OF UPDATE FOR EACH ROW"),
    Trigger(
      table: "session", name: "session_refuse", function: "session_refuse", type: 1 | 64 | 4 | 8,
      events: "INSTEAD OF INSERT OR DELETE FOR EACH ROW"),
    Trigger(
      table: "session_changes", name: "session_changes_guard", function: "session_changes_guard",
      type: 1 | 2 | 4 | 16, events: "BEFORE INSERT OR UPDATE FOR EACH ROW"),
    Trigger(
      table: "session_changes", name: "session_changes_settled", function: "session_changes_guard",
      type: 1 | 4, events: "AFTER INSERT FOR EACH ROW, deferred to the end of the transaction", deferred: true
    ),
  ]

  /// The store's tables, and its one view (`session`, the active account for 1.x habits).
  static let tables = [
    "accounts", "active_account", "schema_migrations", "session_changes", "session_writer",
  ]
  static let views = ["session"]

  /// The functions of the migrations, each as its newest migration defines it, by name.
  static let functions: [String: Function] = {
    var found: [String: Function] = [:]
    for migration in PostgresMigrator.known {
      for function in definedFunctions(in: migration.sql) {
        found[function.name] = Function(
          name: function.name, body: function.body, securityDefiner: function.securityDefiner,
          migration: migration.name)
      }
    }
    return found
  }()

  /// The functions `CREATE [OR REPLACE] FUNCTION name() … AS $$body$$` that start a line
  /// of `sql`, in order.
  static func definedFunctions(in sql: String) -> [(name: String, body: String, securityDefiner: Bool)] {
    var found: [(String, String, Bool)] = []
    var rest = sql[...]
    let keywords = ["\nCREATE OR REPLACE FUNCTION ", "\nCREATE FUNCTION "]
    while let start = keywords.compactMap({ rest.rangeAsFoundationFinds($0) }).min(by: {
      $0.lowerBound < $1.lowerBound
    }) {
      let definition = rest[start.upperBound...]
      guard let open = definition.firstIndex(of: "("), let opening = definition.rangeAsFoundationFinds("$$"),
        let closing = definition[opening.upperBound...].rangeAsFoundationFinds("$$")
      else { break }
      let name = definition[..<open].trimmingWhitespace()
      let header = definition[..<opening.lowerBound]
      found.append(
        (
          name, String(definition[opening.upperBound..<closing.lowerBound]),
          header.contains("SECURITY DEFINER")
        ))
      rest = definition[closing.upperBound...]
    }
    return found
  }

  /// The differences between the schema and what its migrations make, each a sentence;
  /// empty when there is none. Runs on a connection whose search path is the store's.
  static func problems(on connection: PQConnection) throws -> [String] {
    try functionProblems(on: connection) + triggerProblems(on: connection) + tableProblems(on: connection)
  }

  private static func functionProblems(on connection: PQConnection) throws -> [String] {
    let place = connection.place
    let rows = try connection.query(
      """
      SELECT p.proname, p.prosrc, p.prosecdef, coalesce(array_to_string(p.proconfig, ' '), ''),
        'search_path=' || current_setting('search_path'), l.lanname, p.prorettype = 'trigger'::regtype
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
      WHERE n.nspname = $1 AND p.proname = ANY($2::text[]) AND p.pronargs = 0
      ORDER BY p.proname
      """, [place.schema, "{" + functions.keys.sorted().joined(separator: ",") + "}"]
    ).rows
    var problems: [String] = []
    let found = Set(rows.compactMap { $0[0] })
    for name in functions.keys.sorted() where !found.contains(name) {
      problems.append("function \(name)() is missing")
    }
    for row in rows {
      let name = row[0] ?? ""
      guard let expected = functions[name] else { continue }
      let config = row[3] ?? ""
      let path = row[4] ?? ""
      if row[5] != "plpgsql" || row[6] != "t" || row[1] != expected.body {
        problems.append(
          "function \(name)() is not the one of migration \(expected.migration): it was replaced (CREATE OR "
            + "REPLACE FUNCTION)")
      }
      if (row[2] == "t") != expected.securityDefiner {
        problems.append(
          "function \(name)() runs as \(row[2] == "t" ? "its owner (SECURITY DEFINER)" : "its caller"), not as "
            + "migration \(expected.migration) says")
      }
      guard config != path else { continue }
      if let other = firstSchema(of: config), other != place.schema {
        problems.append(
          "function \(name)() searches schema \(other), not \(place.schema), so its writes would reach that "
            + "schema's tables: if the schema was renamed from \(other), rename it back (ALTER SCHEMA "
            + "\(place.quotedSchema) RENAME TO \(other)), or make the function search this one (ALTER FUNCTION "
            + "\(place.quotedSchema).\(name)() SET search_path = \(place.quotedSchema), pg_temp)")
      } else {
        problems.append(
          "function \(name)() runs with \(config.isEmpty ? "no settings" : "'\(config)'") instead of '\(path)'"
        )
      }
    }
    return problems
  }

  private static func triggerProblems(on connection: PQConnection) throws -> [String] {
    let place = connection.place
    let rows = try connection.query(
      """
      SELECT c.relname, t.tgname, t.tgenabled, t.tgtype, fn.nspname = $1 AND f.proname = ANY($2::text[]),
        f.proname, t.tgnargs, t.tgqual IS NOT NULL, t.tgattr::text <> '',
        t.tgconstraint <> 0 AND t.tgdeferrable AND t.tginitdeferred
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_proc f ON f.oid = t.tgfoid JOIN pg_namespace fn ON fn.oid = f.pronamespace
      WHERE n.nspname = $1 AND c.relname = ANY($3::text[]) AND NOT t.tgisinternal
      ORDER BY c.relname, t.tgname
      """,
      [
        place.schema, "{" + functions.keys.sorted().joined(separator: ",") + "}",
        "{" + Set(triggers.map(\.table)).sorted().joined(separator: ",") + "}",
      ]
    ).rows
    var problems: [String] = []
    for trigger in triggers where !rows.contains(where: { $0[0] == trigger.table && $0[1] == trigger.name }) {
      problems.append("trigger \(trigger.name) on \(trigger.table) is missing")
    }
    for row in rows {
      let table = row[0] ?? "", name = row[1] ?? ""
      guard let expected = triggers.first(where: { $0.table == table && $0.name == name }) else {
        problems.append("trigger \(name) on \(table) was added by hand")
        continue
      }
      switch row[2] {
      case "O": break
      case "D": problems.append("trigger \(name) on \(table) is disabled")
      case "R":
        problems.append(
          "trigger \(name) on \(table) fires only for replication (ENABLE REPLICA TRIGGER), never for writers"
        )
      case "A":
        problems.append(
          "trigger \(name) on \(table) fires always (ENABLE ALWAYS TRIGGER), not in the normal mode")
      default: problems.append("trigger \(name) on \(table) has the firing mode '\(row[2] ?? "")'")
      }
      if Int(row[3] ?? "") != expected.type || (row[9] == "t") != expected.deferred {
        problems.append("trigger \(name) on \(table) does not fire \(expected.events) as it should")
      }
      if row[4] != "t" || row[5] != expected.function {
        problems.append(
          "trigger \(name) on \(table) runs \(row[5] ?? "another function")() instead of this schema's "
            + "\(expected.function)()")
      }
      if row[6] != "0" || row[7] == "t" || row[8] == "t" {
        problems.append("trigger \(name) on \(table) has arguments, a WHEN condition or a column list")
      }
    }
    return problems
  }

  private static func tableProblems(on connection: PQConnection) throws -> [String] {
    let schema = connection.place.quotedSchema
    // Names of other tables as `regclass` prints them on the store's search path: this
    // schema's unqualified, any other's qualified.
    let rows = try connection.query(
      """
      SELECT c.relname, c.relkind, c.relrowsecurity,
        (SELECT count(*) FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN'),
        c.relpersistence,
        (SELECT string_agg(i.inhrelid::regclass::text, ', ' ORDER BY i.inhrelid::regclass::text)
         FROM pg_inherits i WHERE i.inhparent = c.oid),
        (SELECT string_agg(i.inhparent::regclass::text, ', ' ORDER BY i.inhparent::regclass::text)
         FROM pg_inherits i WHERE i.inhrelid = c.oid)
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2::text[]) ORDER BY c.relname
      """, [connection.place.schema, "{" + (tables + views).joined(separator: ",") + "}"]
    ).rows
    var problems: [String] = []
    for table in tables where !rows.contains(where: { $0[0] == table }) {
      problems.append("table \(table) is missing")
    }
    for view in views where !rows.contains(where: { $0[0] == view }) {
      problems.append("view \(view) is missing")
    }
    for row in rows {
      let name = row[0] ?? ""
      if views.contains(name) {
        if row[1] != "v" { problems.append("\(name) is not a view (relkind '\(row[1] ?? "")')") }
        if row[3] != "0" {
          problems.append("view \(name) has rules (CREATE RULE), which can rewrite its writes")
        }
        continue
      }
      if row[1] != "r" { problems.append("\(name) is not a plain table (relkind '\(row[1] ?? "")')") }
      if row[2] == "t" { problems.append("table \(name) has row-level security, which can hide its rows") }
      if row[3] != "0" {
        problems.append("table \(name) has rules (CREATE RULE), which can rewrite its writes")
      }
      if row[4] == "u" {
        problems.append(
          "table \(name) is UNLOGGED: the server empties it after a crash or an immediate shutdown, and what "
            + "it holds is lost, acknowledged changes included; make it crash-safe again with "
            + "ALTER TABLE \(schema).\(name) SET LOGGED")
      }
      if let children = row[5] {
        problems.append(
          "table \(name) is inherited by \(children) (INHERITS): rows of a child pass none of \(name)'s "
            + "triggers; detach it with ALTER TABLE <child> NO INHERIT \(schema).\(name), or drop it")
      }
      if let parents = row[6] {
        problems.append(
          "table \(name) inherits from \(parents); detach it with ALTER TABLE \(schema).\(name) NO INHERIT "
            + "<parent>")
      }
    }
    return problems
  }

  /// The first schema of a `search_path=…` setting, unquoted; nil when there is none.
  private static func firstSchema(of config: String) -> String? {
    guard config.hasPrefix("search_path=") else { return nil }
    let first = config.dropFirst("search_path=".count).split(separator: ",").first.map {
      $0.trimmingWhitespace()
    }
    guard var name = first, !name.isEmpty, name != "pg_temp" else { return nil }
    if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 {
      name = String(name.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }
    return name
  }

  /// The refusal for a schema that differs from what its migrations make, or nil.
  /// A `session_writer` or `active_account` table without its row (emptied: an `UNLOGGED`
  /// table after a crash, or a `TRUNCATE` with its triggers disabled) is refused too: the
  /// head or the active pointer is gone.
  static func refusal(on connection: PQConnection) throws -> SessionStorageError? {
    var found = try problems(on: connection)
    for table in ["session_writer", "active_account"] where !found.contains("table \(table) is missing") {
      if try connection.scalar("SELECT count(*) FROM ONLY \(table) WHERE id = 1") == "0" {
        found.append(
          "the \(table) table holds no row: it was emptied (an UNLOGGED table after a crash or an immediate "
            + "shutdown, or a TRUNCATE with its triggers disabled), and the store's head or active account with "
            + "it; restore the schema from a backup")
      }
    }
    guard !found.isEmpty else { return nil }
    return SessionStorageError(
      .tamperedSchema,
      "schema \(connection.place.schema) was changed by hand: " + found.joined(separator: "; ") + ". "
        + repair(connection.place),
      path: connection.place.described)
  }

  /// How to repair a schema changed by hand.
  static func repair(_ place: PostgresPlace) -> String {
    "Nothing was written; run the repair a finding names, else re-create what differs with its SQL "
      + "in migrations/postgres/ (run with SET search_path TO \(place.quotedSchema), pg_temp), or restore the "
      + "schema from a dump"
  }
}
