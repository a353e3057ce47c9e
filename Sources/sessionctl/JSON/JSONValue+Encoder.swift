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
