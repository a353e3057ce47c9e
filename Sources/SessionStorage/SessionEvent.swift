/// What a change means, derived from the states before and after it.
///
/// Prints as `sessionctl` does (`login alice`, `logout alice`, `rename alice → bob`) and
/// encodes as its JSON: `{"type":"loggedIn","username":"alice"}`,
/// `{"type":"loggedOut","username":…}`, `{"type":"usernameChanged","from":…,"to":…}`.
public enum SessionEvent: Sendable, Hashable, Codable, CustomStringConvertible {
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

  /// `login alice`, `logout alice` or `rename alice → bob`.
  public var description: String {
    switch self {
    case .loggedIn(let username): "login \(username.escapedForTerminal)"
    case .loggedOut(let username): "logout \(username.escapedForTerminal)"
    case .usernameChanged(let from, let to): "rename \(from.escapedForTerminal) → \(to.escapedForTerminal)"
    }
  }

  private enum CodingKeys: String, CodingKey { case type, username, from, to }

  /// Decodes one of the three JSON shapes.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let type = try container.decode(String.self, forKey: .type)
    switch type {
    case "loggedIn": self = .loggedIn(username: try container.decodeIfPresent(String.self, forKey: .username))
    case "loggedOut":
      self = .loggedOut(username: try container.decodeIfPresent(String.self, forKey: .username))
    case "usernameChanged":
      self = .usernameChanged(
        from: try container.decodeIfPresent(String.self, forKey: .from),
        to: try container.decodeIfPresent(String.self, forKey: .to))
    default:
      throw DecodingError.dataCorruptedError(
        forKey: .type, in: container, debugDescription: "unknown event type \"\(type)\"")
    }
  }

  /// Encodes `{"type":…}` then the usernames, `null` for none.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    switch self {
    case .loggedIn(let username):
      try container.encode("loggedIn", forKey: .type)
      try container.encode(username, forKey: .username)
    case .loggedOut(let username):
      try container.encode("loggedOut", forKey: .type)
      try container.encode(username, forKey: .username)
    case .usernameChanged(let from, let to):
      try container.encode("usernameChanged", forKey: .type)
      try container.encode(from, forKey: .from)
      try container.encode(to, forKey: .to)
    }
  }
}
