import FeedKit

/// A JSON value whose objects keep their members in the order written: the one encoder of
/// `sessionctl --json` and of the library's `jsonLine` properties, so that an app and the
/// CLI print the same bytes for the same entry.
///
/// Each line's shape is defined once, as a `json` value of its type; the types' `Encodable`
/// conformances encode that value too, so `JSONEncoder` writes the same members (in its own
/// order and with its own escaping).
package enum JSONValue: Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case string(String)
  case array([JSONValue])
  /// Members in the order written.
  case object([(key: String, value: JSONValue)])

  /// A string, or `null` for nil.
  package static func string(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  package init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(elements.map { (key: $0.0, value: $0.1) })
  }
}

extension JSONValue: ExpressibleByArrayLiteral {
  package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByStringLiteral {
  package init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  package init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  package init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByNilLiteral {
  package init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
  /// The value as compact JSON text on one line: no spaces, no newline (RFC 8259).
  package var encoded: String {
    var output = ""
    encode(into: &output)
    return output
  }

  private func encode(into output: inout String) {
    switch self {
    case .null: output += "null"
    case .bool(let value): output += value ? "true" : "false"
    case .int(let value): output += String(value)
    case .string(let value): Self.encode(string: value, into: &output)
    case .array(let elements):
      output += "["
      for (index, element) in elements.enumerated() {
        if index > 0 { output += "," }
        element.encode(into: &output)
      }
      output += "]"
    case .object(let members):
      output += "{"
      for (index, member) in members.enumerated() {
        if index > 0 { output += "," }
        Self.encode(string: member.key, into: &output)
        output += ":"
        member.value.encode(into: &output)
      }
      output += "}"
    }
  }

  /// A quoted string: `"` and `\` escaped, control characters (C0, DEL and C1) as `\n`-style
  /// or `\u00XX` escapes, U+2028/U+2029 escaped so the line is also valid JavaScript, and
  /// format characters but U+200D (bidirectional controls such as U+202E, zero-width spaces,
  /// tags) as `\uXXXX` (a surrogate pair above U+FFFF), so a terminal showing the line
  /// cannot be made to reorder or hide part of it. Everything else is written as UTF-8.
  package static func encode(string: String, into output: inout String) {
    output += "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": output += "\\\""
      case "\\": output += "\\\\"
      case "\n": output += "\\n"
      case "\r": output += "\\r"
      case "\t": output += "\\t"
      case "\u{08}": output += "\\b"
      case "\u{0C}": output += "\\f"
      case _ where scalar.isEscapedInOutput:
        UTF16.encode(scalar) { unit in
          let hex = String(unit, radix: 16, uppercase: false)
          output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
      default: output.unicodeScalars.append(scalar)
      }
    }
    output += "\""
  }
}

extension JSONValue: Encodable {
  /// A member name, as an `Encoder` wants it.
  private struct MemberKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }

  /// Encodes the value through any `Encoder`: what the library types' `encode(to:)` do, so
  /// that `JSONEncoder` writes the members ``encoded`` writes.
  package func encode(to encoder: any Encoder) throws {
    switch self {
    case .null:
      var container = encoder.singleValueContainer()
      try container.encodeNil()
    case .bool(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .int(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .string(let value):
      var container = encoder.singleValueContainer()
      try container.encode(value)
    case .array(let elements):
      var container = encoder.unkeyedContainer()
      for element in elements { try container.encode(element) }
    case .object(let members):
      var container = encoder.container(keyedBy: MemberKey.self)
      for member in members { try container.encode(member.value, forKey: MemberKey(stringValue: member.key)) }
    }
  }
}

extension SessionState {
  /// `{"username":…,"isLoggedIn":…,"updatedAt":…}`, `null` for no username: sessionctl's
  /// state object.
  package var json: JSONValue {
    [
      "username": .string(username), "isLoggedIn": .bool(isLoggedIn),
      "updatedAt": .string(Timestamp.format(updatedAt)),
    ]
  }
}

extension SessionEvent {
  /// `{"type":"loggedIn","username":…}` (and `added`, `loggedOut`, `activated`,
  /// `deactivated`, `removed` alike) or `{"type":"usernameChanged","from":…,"to":…}`, `null`
  /// for no username.
  package var json: JSONValue {
    switch self {
    case .added(let username): ["type": "added", "username": .string(username)]
    case .loggedIn(let username): ["type": "loggedIn", "username": .string(username)]
    case .loggedOut(let username): ["type": "loggedOut", "username": .string(username)]
    case .usernameChanged(let from, let to):
      ["type": "usernameChanged", "from": .string(from), "to": .string(to)]
    case .activated(let username): ["type": "activated", "username": .string(username)]
    case .deactivated(let username): ["type": "deactivated", "username": .string(username)]
    case .removed(let username): ["type": "removed", "username": .string(username)]
    }
  }
}

extension SessionSnapshot {
  /// `{"type":"snapshot","cursor":N,"state":{…}}`.
  package var json: JSONValue {
    ["type": "snapshot", "cursor": .int(cursor.value), "state": state.json]
  }

  /// The line `sessionctl watch --json` prints first for this snapshot, byte for byte,
  /// without the newline: `{"type":"snapshot","cursor":4,"state":{"username":"alice",…}}`.
  ///
  /// Members come in that order, with no spaces; control and format characters in a
  /// username are written as `\uXXXX` escapes (`\u202e`), everything else as UTF-8.
  /// `JSONEncoder` writes the same members, in an order of its own.
  public var jsonLine: String { json.encoded }
}

extension FeedEntry where Change == SessionChange {
  /// `{"type":"change","cursor":N,"at":…,"origin":…,"account":N,"events":[…],"before":{…},
  /// "after":{…},"wasActive":…,"isActive":…}`.
  package var json: JSONValue {
    [
      "type": "change", "cursor": .int(cursor.value), "at": .string(Timestamp.format(time)),
      "origin": .string(origin), "account": .int(change.account.value),
      "events": .array(change.events.map(\.json)),
      "before": change.before.json, "after": change.after.json, "wasActive": .bool(change.wasActive),
      "isActive": .bool(change.isActive),
    ]
  }

  /// The line `sessionctl watch --json` (and `history --json`) prints for this entry, byte
  /// for byte, without the newline:
  /// `{"type":"change","cursor":7,"at":"2026-11-29T20:33:36.256Z","origin":"sessionctl","account":2,"events":[…],"before":{…},"after":{…},"wasActive":false,"isActive":true}`.
  ///
  /// Members come in that order, with no spaces; control and format characters in a
  /// username or origin are written as `\uXXXX` escapes (`\u202e`), everything else as
  /// UTF-8. `JSONEncoder` writes the same members, in an order of its own.
  public var jsonLine: String { json.encoded }
}
