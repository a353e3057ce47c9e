import SessionStorage

/// The JSON shapes of sessionctl's output that the library does not define itself. The
/// library's `JSONValue` is the one encoder; its `jsonLine` properties give the change and
/// snapshot lines, and its state object is the `json` of a `SessionState`.
extension JSONValue {
  /// `status --json`: a state object plus `"cursor"`.
  static func status(_ snapshot: SessionSnapshot) -> JSONValue {
    guard case .object(let members) = snapshot.state.json else { return .null }
    return .object(members + [(key: "cursor", value: .int(snapshot.cursor.value))])
  }

  /// A write that changed nothing: `{"type":"noChange","cursor":N,"state":{…}}`.
  static func noChange(_ snapshot: SessionSnapshot) -> JSONValue {
    ["type": "noChange", "cursor": .int(snapshot.cursor.value), "state": snapshot.state.json]
  }
}
