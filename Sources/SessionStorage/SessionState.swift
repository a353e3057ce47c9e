import Foundation

/// Who is signed in: the content of the `session` row.
///
/// Prints like `sessionctl`'s lines (`alice, logged in, updated 2026-11-29T20:33:33.897Z`)
/// and encodes as its JSON state object:
/// `{"username":"alice","isLoggedIn":true,"updatedAt":"2026-11-29T20:33:33.897Z"}`.
public struct SessionState: Sendable, Hashable, Codable, CustomStringConvertible, SessionProviding {
  /// The username, or nil when none was ever set. Kept on logout (see ``SessionStore/logOut()``).
  public var username: String?
  /// Whether the user is signed in.
  public var isLoggedIn: Bool
  /// When the state last changed, to the millisecond (as the file stores it).
  public var updatedAt: Date

  /// Creates a state.
  public init(username: String?, isLoggedIn: Bool, updatedAt: Date) {
    self.username = username
    self.isLoggedIn = isLoggedIn
    self.updatedAt = updatedAt
  }

  /// `alice, logged in, updated 2026-11-29T20:33:33.897Z`; `(none)` for no username, and
  /// control and format characters escaped (`\u{202E}`), as `sessionctl` prints them.
  public var description: String {
    "\(username.escapedForTerminal), \(isLoggedIn ? "logged in" : "logged out"), "
      + "updated \(Timestamp.format(updatedAt))"
  }

  private enum CodingKeys: String, CodingKey { case username, isLoggedIn, updatedAt }

  /// Decodes a JSON state object; `updatedAt` must be in the feed's time format.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    username = try container.decodeIfPresent(String.self, forKey: .username)
    isLoggedIn = try container.decode(Bool.self, forKey: .isLoggedIn)
    updatedAt = try container.decodeTimestamp(forKey: .updatedAt)
  }

  /// Encodes `{"username":…,"isLoggedIn":…,"updatedAt":…}`, in that order, with `null`
  /// for no username.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(username, forKey: .username)
    try container.encode(isLoggedIn, forKey: .isLoggedIn)
    try container.encode(Timestamp.format(updatedAt), forKey: .updatedAt)
  }
}

extension KeyedDecodingContainer {
  /// A time in the feed's format (`2026-11-29T20:33:33.897Z`).
  func decodeTimestamp(forKey key: Key) throws -> Date {
    let text = try decode(String.self, forKey: key)
    guard let date = Timestamp.parse(text) else {
      throw DecodingError.dataCorruptedError(
        forKey: key, in: self, debugDescription: "'\(text)' is not a time like 2026-11-29T20:33:33.897Z")
    }
    return date
  }
}
