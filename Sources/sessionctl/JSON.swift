import SessionStorage

/// The JSON shapes of sessionctl's output that the library does not define itself. The
/// library's `JSONValue` is the one encoder; its `jsonLine` properties give the change and
/// snapshot lines, and its state object is the `json` of a `SessionState`.
extension JSONValue {
  /// `status --json`: the active account's state object plus `"cursor"`, `"active"` (its
  /// id, or null) and `"accounts"` (how many the roster holds).
  static func status(_ roster: SessionRoster) -> JSONValue {
    guard case .object(let members) = roster.state.json else { return .null }
    let active: JSONValue = roster.activeID.map { JSONValue.int($0.value) } ?? JSONValue.null
    var all = members
    all.append((key: "cursor", value: .int(roster.cursor.value)))
    all.append((key: "active", value: active))
    all.append((key: "accounts", value: .int(Int64(roster.accounts.count))))
    return .object(all)
  }

  /// A write that changed nothing: `{"type":"noChange","cursor":N,"state":{…}}`.
  static func noChange(_ snapshot: SessionSnapshot) -> JSONValue {
    ["type": "noChange", "cursor": .int(snapshot.cursor.value), "state": snapshot.state.json]
  }
}
