import CommandLineKit
import SessionStorage

extension Cursor: ExpressibleByArgument {
  /// A cursor as typed: a whole number ≥ 0.
  package init(argument: String) throws(InvalidValue) {
    guard let cursor = Cursor(argument) else {
      throw InvalidValue(expected: "a whole number ≥ 0", noun: "cursor")
    }
    self = cursor
  }
}
