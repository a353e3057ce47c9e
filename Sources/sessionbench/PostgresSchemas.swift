import SessionStoragePostgres

/// A `pg-*` scenario's scratch space on the server: two fresh schemas, one for our store and
/// one for the baseline, so that a listener on one channel never wakes for the other's
/// writes. Both get the store's schema by opening a `PostgresSessionStore` on them (the
/// migrations); after that only raw libpq calls touch the baseline's. Both are dropped
/// (`DROP SCHEMA … CASCADE`) when this is dropped.
final class PostgresSchemas {
  /// The server, without a `schema` parameter.
  let server: String
  /// Our store's schema.
  let ours: String
  /// The baseline's schema.
  let raw: String
  /// The connection that drops the schemas, opened first: an unreachable server fails here.
  private let admin: RawPQ

  init(server: String) throws {
    self.server = server
    admin = try RawPQ(url: server)
    let tag = String((0..<8).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    ours = "sessionbench_\(tag)_ours"
    raw = "sessionbench_\(tag)_raw"
    // Dropped by deinit, which also runs when this throws.
    _ = try PostgresSessionStore(url: Self.url(server, schema: raw), options: .init(origin: "sessionbench"))
  }

  deinit {
    do {
      try admin.exec(
        "DROP SCHEMA IF EXISTS \(RawPQ.quoted(ours)) CASCADE; DROP SCHEMA IF EXISTS \(RawPQ.quoted(raw)) CASCADE"
      )
    } catch {
      SessionBench.warn("sessionbench: could not drop the schemas \(ours) and \(raw): \(error)")
    }
  }

  /// The URL of the store in `schema` on `server`.
  static func url(_ server: String, schema: String) -> String {
    server + (server.contains("?") ? "&" : "?") + "schema=" + schema
  }

  /// Our store's URL.
  var oursURL: String { Self.url(server, schema: ours) }

  /// Opens our store.
  func store(origin: String = "sessionbench") throws -> PostgresSessionStore {
    try PostgresSessionStore(url: oursURL, options: .init(origin: origin))
  }

  /// A raw connection with `search_path` set to the baseline's schema.
  func rawConnection() throws -> RawPQ { try RawPQ(url: server, schema: raw) }
}
