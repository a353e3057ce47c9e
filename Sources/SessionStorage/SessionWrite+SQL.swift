extension SessionWrite {
  /// The conditional UPDATE for this write: it changes the row only when the values
  /// differ, names the writer (the origin is bound last), and bumps the write token so
  /// the trigger records that origin instead of `external`.
  var statement: (sql: String, bindings: [SQLiteValue]) {
    switch self {
    case .login(let name): (Self.loginSQL, [.text(name)])
    case .logout: (Self.logoutSQL, [])
    case .rename(let name): (Self.renameSQL, [.text(name)])
    }
  }

  // Built once: the statement cache is keyed by the SQL text, which each write hashes.
  private static let stamp = "write_token = write_token + 1"
  private static let loginSQL =
    "UPDATE session SET username = ?1, is_logged_in = 1, updated_by = ?2, \(stamp) "
    + "WHERE id = 1 AND (username IS NOT ?1 OR is_logged_in IS NOT 1)"
  private static let logoutSQL =
    "UPDATE session SET is_logged_in = 0, updated_by = ?1, \(stamp) WHERE id = 1 AND is_logged_in IS NOT 0"
  private static let renameSQL =
    "UPDATE session SET username = ?1, updated_by = ?2, \(stamp) WHERE id = 1 AND username IS NOT ?1"
}
