import SessionStorage
import SessionStoragePostgres

/// What sessionctl administers through one contract, whichever backs it: a SQLite file
/// (``SessionStore``) or a PostgreSQL schema (`PostgresSessionStore`). Every command but `backup`, `restore` and
/// `retention` (which work on a file) uses only this.
protocol AdministeredStore: SessionRepository {
  /// The migrations this open applied (empty when the schema was up to date).
  var appliedMigrations: [Migration] { get }
  /// Every verification, one result each.
  func check() throws -> [CheckResult]
}

extension SessionStore: AdministeredStore {}
extension PostgresSessionStore: AdministeredStore {}
