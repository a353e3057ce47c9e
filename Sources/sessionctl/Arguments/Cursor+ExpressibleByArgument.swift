import CommandLineKit
import SessionStorage

extension Cursor: ExpressibleByArgument {
  /// A cursor as typed: a whole number ≥ 0, up to the largest cursor (`Int64.max`).
  package init(argument: String) throws(InvalidValue) {
    guard let cursor = Cursor(argument) else {
      throw InvalidValue(expected: Int.isDigits(argument) ? Int.range : "a whole number ≥ 0", noun: "cursor")
    }
    self = cursor
  }
}
