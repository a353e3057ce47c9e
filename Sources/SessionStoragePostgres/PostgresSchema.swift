import Foundation
import SessionStorage

/// What a store verifies about its schema's functions beyond the migration ledger: that
/// they still reach this schema's tables. Their search path names the schema (`<schema>,
/// pg_temp`, kept by `SET search_path FROM CURRENT`), so after `ALTER SCHEMA … RENAME` it
/// names the old name: a schema that is gone, or another store's. Such a schema is refused
/// (`tamperedSchema`) instead of having its writes refused one by one by `session_feed`.
enum PostgresSchema {
  /// The functions the migrations create, each with the search path of the schema.
  static let functions = ["session_changes_guard", "session_feed", "session_refuse"]

  /// The problems found in the schema's functions, each a sentence; empty when they are as
  /// the migrations made them. Runs on a connection whose search path is the store's.
  static func problems(on connection: PQConnection) throws -> [String] {
    let place = connection.place
    let rows = try connection.query(
      """
      SELECT p.proname, coalesce(array_to_string(p.proconfig, ' '), ''), 'search_path=' || current_setting('search_path')
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.proname = ANY($2::text[]) AND p.pronargs = 0
      ORDER BY p.proname
      """, [place.schema, "{" + functions.joined(separator: ",") + "}"]
    ).rows
    var problems: [String] = []
    let found = Set(rows.compactMap { $0[0] })
    for name in functions where !found.contains(name) {
      problems.append("function \(name)() is missing")
    }
    for row in rows {
      let name = row[0] ?? "", config = row[1] ?? "", expected = row[2] ?? ""
      guard config != expected else { continue }
      if let other = renamedFrom(config), other != place.schema {
        problems.append(
          "function \(name)() searches schema \(other), not \(place.schema): the schema was renamed from "
            + "\(other); rename it back (ALTER SCHEMA \(place.quotedSchema) RENAME TO \(other)), or make it "
            + "search this one (ALTER FUNCTION \(place.quotedSchema).\(name)() SET search_path = "
            + "\(place.quotedSchema), pg_temp)")
      } else {
        problems.append(
          "function \(name)() runs with \(config.isEmpty ? "no settings" : "'\(config)'") instead of '\(expected)'"
        )
      }
    }
    return problems
  }

  /// The first schema of a `search_path=…` setting, unquoted; nil when there is none.
  private static func renamedFrom(_ config: String) -> String? {
    guard config.hasPrefix("search_path=") else { return nil }
    let first = config.dropFirst("search_path=".count).split(separator: ",").first.map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    guard var name = first, !name.isEmpty, name != "pg_temp" else { return nil }
    if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 {
      name = String(name.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }
    return name
  }

  /// The refusal for a schema whose functions are not as the migrations made them, or nil.
  static func refusal(on connection: PQConnection) throws -> SessionStorageError? {
    let found = try problems(on: connection)
    guard !found.isEmpty else { return nil }
    return SessionStorageError(
      .tamperedSchema,
      "schema \(connection.place.schema) was changed by hand: " + found.joined(separator: "; ")
        + ". Nothing was written",
      path: connection.place.described)
  }
}
