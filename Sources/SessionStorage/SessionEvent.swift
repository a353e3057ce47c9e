/// What a change means, derived from the states before and after it.
public enum SessionEvent: Sendable, Equatable, Hashable {
  /// The user signed in (the username may be nil when a shell user set only `is_logged_in`).
  case loggedIn(username: String?)
  /// The user signed out; the username is the one that was signed in.
  case loggedOut(username: String?)
  /// The username changed, whatever the login state.
  case usernameChanged(from: String?, to: String?)

  /// The events between two states, in the order a reader expects: sign-out of the old
  /// state, the rename, sign-in of the new state. One change may carry several.
  public static func between(_ before: SessionState, _ after: SessionState) -> [SessionEvent] {
    var events: [SessionEvent] = []
    if before.isLoggedIn && !after.isLoggedIn { events.append(.loggedOut(username: before.username)) }
    if before.username != after.username {
      events.append(.usernameChanged(from: before.username, to: after.username))
    }
    if !before.isLoggedIn && after.isLoggedIn { events.append(.loggedIn(username: after.username)) }
    return events
  }
}
