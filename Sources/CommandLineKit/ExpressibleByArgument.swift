/// A type whose values can be typed on a command line, in the spirit of
/// swift-argument-parser's protocol of the same name; a refusal says what was expected,
/// and ``ParsedArguments`` adds what was typed and for which option.
package protocol ExpressibleByArgument: Sendable {
  /// The value `argument` spells.
  /// - Throws: ``InvalidValue`` saying what a valid value looks like.
  init(argument: String) throws(InvalidValue)
}

extension String: ExpressibleByArgument {
  package init(argument: String) { self = argument }
}

extension Int: ExpressibleByArgument {
  /// A count: ASCII digits only, so `-1`, `+1` and `1.0` are refused (no command here
  /// takes a negative number), up to `Int.max`, which is also SQLite's largest integer
  /// (a larger one is refused naming the range).
  package init(argument: String) throws(InvalidValue) {
    guard Self.isDigits(argument) else { throw InvalidValue(expected: "a whole number ≥ 0") }
    guard let value = Int(argument) else { throw InvalidValue(expected: Self.range) }
    self = value
  }

  /// What a count too large for `Int` is told: `a whole number from 0 to 9223372036854775807`.
  package static let range = "a whole number from 0 to \(Int.max)"

  /// Whether `text` is one or more ASCII digits.
  package static func isDigits(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
  }
}

extension UInt64: ExpressibleByArgument {
  /// ASCII digits, up to 2^64 − 1 (seeds).
  package init(argument: String) throws(InvalidValue) {
    guard Int.isDigits(argument), let value = UInt64(argument) else {
      throw InvalidValue(expected: "a whole number from 0 to \(UInt64.max)")
    }
    self = value
  }
}

extension Double: ExpressibleByArgument {
  /// A finite number ≥ 0 (durations): `600`, `2.5`.
  package init(argument: String) throws(InvalidValue) {
    guard let value = Double(argument), value.isFinite, value >= 0 else {
      throw InvalidValue(expected: "a number ≥ 0")
    }
    self = value
  }
}
