extension SessionWrite {
  /// The conditional UPDATE for this write by `origin`: it changes the row only when the
  /// values differ, names the writer (the origin is bound last), and bumps the write token
  /// so the trigger records that origin instead of `external`.
  func statement(origin: String) -> (sql: SQL, bindings: [SQLiteValue]) {
    switch self {
    case .login(let name): (Self.loginSQL, [.text(name), .text(origin)])
    case .logout: (Self.logoutSQL, [.text(origin)])
    case .rename(let name): (Self.renameSQL, [.text(name), .text(origin)])
    }
  }

  // Built once; each connection prepares them once (see ``SQL``).
  private static let stamp = "write_token = write_token + 1"
  private static let loginSQL = SQL(
    "UPDATE session SET username = ?1, is_logged_in = 1, updated_by = ?2, \(stamp) "
      + "WHERE id = 1 AND (username IS NOT ?1 OR is_logged_in IS NOT 1)")
  private static let logoutSQL = SQL(
    "UPDATE session SET is_logged_in = 0, updated_by = ?1, \(stamp) WHERE id = 1 AND is_logged_in IS NOT 0")
  private static let renameSQL = SQL(
    "UPDATE session SET username = ?1, updated_by = ?2, \(stamp) WHERE id = 1 AND username IS NOT ?1")
}
