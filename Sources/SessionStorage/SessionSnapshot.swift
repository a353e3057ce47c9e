/// The state and the cursor of the newest change it includes, read in one transaction.
///
/// Follow it with ``SessionStore/changes(from:)`` from `.after(snapshot.cursor)` and no
/// change is missed or repeated. Prints like `sessionctl watch`'s first line, and encodes as
/// its JSON: `{"type":"snapshot","cursor":4,"state":{…}}`.
public struct SessionSnapshot: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The state at ``cursor``.
  public var state: SessionState
  /// The newest entry included in ``state`` (`Cursor.zero` before the first change).
  public var cursor: Cursor

  /// Creates a snapshot.
  public init(state: SessionState, cursor: Cursor) {
    self.state = state
    self.cursor = cursor
  }

  /// `snapshot at 4: alice, logged in, updated 2026-11-29T20:33:33.897Z`.
  public var description: String { "snapshot at \(cursor): \(state)" }

  private enum CodingKeys: String, CodingKey { case type, cursor, state }

  /// Decodes `{"type":"snapshot","cursor":N,"state":{…}}`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try container.expectType("snapshot", forKey: .type)
    cursor = try container.decode(Cursor.self, forKey: .cursor)
    state = try container.decode(SessionState.self, forKey: .state)
  }

  /// Encodes `{"type":"snapshot","cursor":N,"state":{…}}`, in that order.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode("snapshot", forKey: .type)
    try container.encode(cursor, forKey: .cursor)
    try container.encode(state, forKey: .state)
  }
}

extension KeyedDecodingContainer {
  /// Throws unless the string at `key` is `expected` (the `"type"` member of a line).
  func expectType(_ expected: String, forKey key: Key) throws {
    let type = try decode(String.self, forKey: key)
    guard type == expected else {
      throw DecodingError.dataCorruptedError(
        forKey: key, in: self, debugDescription: "expected \"type\":\"\(expected)\", found \"\(type)\"")
    }
  }
}
