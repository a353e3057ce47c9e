/// One of the three writes, with its username already validated.
enum SessionWrite: Sendable {
  case login(String)
  case logout
  case rename(String)

  /// Validates `username` and makes a login.
  static func login(username: String) throws -> SessionWrite { .login(try Username.validated(username)) }

  /// Validates `username` and makes a rename.
  static func rename(to username: String) throws -> SessionWrite { .rename(try Username.validated(username)) }

  /// The state after this write, or nil when it would change nothing.
  func applied(to state: SessionState) -> (username: String?, isLoggedIn: Bool)? {
    let after: (username: String?, isLoggedIn: Bool)
    switch self {
    case .login(let name): after = (name, true)
    case .logout: after = (state.username, false)
    case .rename(let name): after = (name, state.isLoggedIn)
    }
    return after == (state.username, state.isLoggedIn) ? nil : after
  }
}
