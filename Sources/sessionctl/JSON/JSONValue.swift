/// A JSON value whose objects keep their keys in the order written, so every line of
/// output lists its fields in the documented order.
enum JSONValue: Sendable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// A whole number.
  case int(Int64)
  /// A string.
  case string(String)
  /// An array.
  case array([JSONValue])
  /// An object, its members in order.
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
