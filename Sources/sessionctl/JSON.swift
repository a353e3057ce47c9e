import SessionStorage

/// A JSON value whose objects keep their keys in the order written, so every line of
/// output lists its fields in the documented order.
enum JSONValue: Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case string(String)
  case array([JSONValue])
  /// Members in the order written.
  case object([(key: String, value: JSONValue)])

  /// A string, or `null` for nil.
  static func string(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(elements.map { (key: $0.0, value: $0.1) })
  }
}

extension JSONValue: ExpressibleByArrayLiteral {
  init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByStringLiteral {
  init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByNilLiteral {
  init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
  /// The value as compact JSON text on one line: no spaces, no newline (RFC 8259).
  var encoded: String {
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
  static func encode(string: String, into output: inout String) {
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

extension JSONValue {
  /// The JSON of `value`'s `Encodable` conformance, its object members in the order
  /// `encode(to:)` wrote them: the library defines each line's shape once, and
  /// ``encoded`` writes it with sessionctl's escaping.
  /// - Throws: `EncodingError` for a value JSON Lines output has no form for (a fraction).
  init(encoding value: some Encodable) throws {
    let root = Node()
    try root.encode(value, codingPath: [])
    self = root.value
  }
}

/// A value being encoded: one scalar, the members of an object in order, or the elements
/// of an array. A class, because containers keep appending to it after they are handed out.
private final class Node {
  var scalar: JSONValue = .null
  var members: [(key: String, node: Node)]?
  var elements: [Node]?

  var value: JSONValue {
    if let members { return .object(members.map { (key: $0.key, value: $0.node.value) }) }
    if let elements { return .array(elements.map(\.value)) }
    return scalar
  }

  func encode(_ value: some Encodable, codingPath: [any CodingKey]) throws {
    switch value {
    case let text as String: scalar = .string(text)
    case let flag as Bool: scalar = .bool(flag)
    case let number as any BinaryInteger:
      guard let whole = Int64(exactly: number) else {
        throw EncodingError.invalidValue(
          value, .init(codingPath: codingPath, debugDescription: "\(number) does not fit in 64 bits"))
      }
      scalar = .int(whole)
    case is any BinaryFloatingPoint:
      throw EncodingError.invalidValue(
        value, .init(codingPath: codingPath, debugDescription: "sessionctl's JSON has no fractions"))
    default: try value.encode(to: TreeEncoder(node: self, codingPath: codingPath))
    }
  }
}

private struct TreeEncoder: Encoder {
  let node: Node
  let codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    if node.members == nil { node.members = [] }
    return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    if node.elements == nil { node.elements = [] }
    return Unkeyed(node: node, codingPath: codingPath)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    Single(node: node, codingPath: codingPath)
  }
}

private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let node: Node
  let codingPath: [any CodingKey]

  private func child(_ key: Key) -> Node {
    let child = Node()
    node.members?.append((key: key.stringValue, node: child))
    return child
  }

  mutating func encodeNil(forKey key: Key) throws { child(key).scalar = .null }
  mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    try child(key).encode(value, codingPath: codingPath + [key])
  }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
    -> KeyedEncodingContainer<NestedKey>
  {
    TreeEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
  }
  mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    TreeEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
  }
  mutating func superEncoder() -> any Encoder { TreeEncoder(node: node, codingPath: codingPath) }
  mutating func superEncoder(forKey key: Key) -> any Encoder {
    TreeEncoder(node: child(key), codingPath: codingPath + [key])
  }
}

private struct Unkeyed: UnkeyedEncodingContainer {
  let node: Node
  let codingPath: [any CodingKey]
  var count: Int { node.elements?.count ?? 0 }

  private func child() -> Node {
    let child = Node()
    node.elements?.append(child)
    return child
  }

  mutating func encodeNil() throws { child().scalar = .null }
  mutating func encode<T: Encodable>(_ value: T) throws { try child().encode(value, codingPath: codingPath) }
  mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
    -> KeyedEncodingContainer<NestedKey>
  {
    TreeEncoder(node: child(), codingPath: codingPath).container(keyedBy: keyType)
  }
  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    TreeEncoder(node: child(), codingPath: codingPath).unkeyedContainer()
  }
  mutating func superEncoder() -> any Encoder { TreeEncoder(node: child(), codingPath: codingPath) }
}

private struct Single: SingleValueEncodingContainer {
  let node: Node
  let codingPath: [any CodingKey]

  mutating func encodeNil() throws { node.scalar = .null }
  mutating func encode<T: Encodable>(_ value: T) throws { try node.encode(value, codingPath: codingPath) }
}

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
