/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case double(Double)
  case text(String)
  case blob([UInt8])
}

extension SQLiteValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
  init(stringLiteral value: String) { self = .text(value) }
  init(integerLiteral value: Int64) { self = .integer(value) }

  /// `.text(value)`, or `.null` when there is no value.
  static func text(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
}
