/// One of the three writes, with its username already validated.
package enum SessionWrite: Sendable {
  case login(String)
  case logout
  case rename(String)

  /// Validates `username` and makes a login.
  package static func login(username: String) throws -> SessionWrite {
    .login(try Username.validated(username))
  }

  /// Validates `username` and makes a rename.
  package static func rename(to username: String) throws -> SessionWrite {
    .rename(try Username.validated(username))
  }

  /// The state after this write, or nil when it would change nothing.
  package func applied(to state: SessionState) -> (username: String?, isLoggedIn: Bool)? {
    let after: (username: String?, isLoggedIn: Bool)
    switch self {
    case .login(let name): after = (name, true)
    case .logout: after = (state.username, false)
    case .rename(let name): after = (name, state.isLoggedIn)
    }
    return after == (state.username, state.isLoggedIn) ? nil : after
  }
}
