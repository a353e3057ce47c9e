import SessionStorage

/// The JSON shapes of sessionctl's output that the library does not define itself: the
/// library's `Codable` conformances give the state, change and snapshot lines.
extension JSONValue {
  /// `status --json`: a state object plus `"cursor"`.
  static func status(_ snapshot: SessionSnapshot) throws -> JSONValue {
    guard case .object(let members) = try JSONValue(encoding: snapshot.state) else { return .null }
    return .object(members + [(key: "cursor", value: .int(snapshot.cursor.value))])
  }

  /// A write that changed nothing: `{"type":"noChange","cursor":N,"state":{…}}`.
  static func noChange(_ snapshot: SessionSnapshot) throws -> JSONValue {
    [
      "type": "noChange", "cursor": .int(snapshot.cursor.value),
      "state": try JSONValue(encoding: snapshot.state),
    ]
  }
}
