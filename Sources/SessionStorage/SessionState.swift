import Foundation

/// Who is signed in: the content of the `session` row.
public struct SessionState: Sendable, Equatable, Hashable, Codable, SessionProviding {
  /// The username, or nil when none was ever set. Kept on logout (see ``SessionStore/logout()``).
  public var username: String?
  /// Whether the user is signed in.
  public var isLoggedIn: Bool
  /// When the state last changed.
  public var updatedAt: Date

  /// Creates a state.
  public init(username: String?, isLoggedIn: Bool, updatedAt: Date) {
    self.username = username
    self.isLoggedIn = isLoggedIn
    self.updatedAt = updatedAt
  }
}
