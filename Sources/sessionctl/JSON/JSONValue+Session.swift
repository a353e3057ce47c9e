import FeedKit
import SessionStorage

/// The JSON shapes of sessionctl's output; field names as in DESIGN.md.
extension JSONValue {
  /// `{"username":…,"isLoggedIn":…,"updatedAt":…}`.
  static func state(_ state: SessionState) -> JSONValue {
    [
      "username": .string(state.username), "isLoggedIn": .bool(state.isLoggedIn),
      "updatedAt": .string(Timestamp.format(state.updatedAt)),
    ]
  }

  /// `status --json`: a state object plus `"cursor"`.
  static func status(_ state: SessionState, cursor: Cursor) -> JSONValue {
    guard case .object(let members) = JSONValue.state(state) else { return .null }
    return .object(members + [(key: "cursor", value: .int(cursor.rawValue))])
  }

  /// One event: `{"type":"loggedIn","username":…}`, `{"type":"loggedOut","username":…}`
  /// or `{"type":"usernameChanged","from":…,"to":…}` (usernames may be `null`).
  static func event(_ event: SessionEvent) -> JSONValue {
    switch event {
    case .loggedIn(let username): ["type": "loggedIn", "username": .string(username)]
    case .loggedOut(let username): ["type": "loggedOut", "username": .string(username)]
    case .usernameChanged(let from, let to):
      ["type": "usernameChanged", "from": .string(from), "to": .string(to)]
    }
  }

  /// A change line: `{"type":"change","cursor":N,"at":…,"origin":…,"events":[…],"before":{…},"after":{…}}`.
  static func change(_ entry: SessionEntry) -> JSONValue {
    [
      "type": "change", "cursor": .int(entry.cursor.rawValue), "at": .string(Timestamp.format(entry.time)),
      "origin": .string(entry.origin), "events": .array(entry.events.map(event)),
      "before": state(entry.before), "after": state(entry.after),
    ]
  }

  /// A snapshot line: `{"type":"snapshot","cursor":N,"state":{…}}`.
  static func snapshot(_ state: SessionState, cursor: Cursor) -> JSONValue {
    ["type": "snapshot", "cursor": .int(cursor.rawValue), "state": .state(state)]
  }
}
