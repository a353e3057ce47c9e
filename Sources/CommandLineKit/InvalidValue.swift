/// A value its type refuses: `invalid value 'x' for '--limit': expected a whole number ≥ 0`.
/// Unlike a ``UsageError`` the line has the right shape; tools may treat it as bad input.
package struct InvalidValue: Error, Sendable, Equatable {
  /// What was typed.
  package var text: String
  /// What it was given for: `--limit` or `<username>`.
  package var name: String
  /// What the value is called in the message: `value`, or a word such as `cursor`.
  package var noun: String
  /// What a valid value looks like: `a whole number ≥ 0`.
  package var expected: String

  /// A refusal, from ``ExpressibleByArgument/init(argument:)``: ``ParsedArguments`` fills
  /// in `text` and `name`.
  package init(expected: String, noun: String = "value", text: String = "", name: String = "") {
    self.expected = expected
    self.noun = noun
    self.text = text
    self.name = name
  }

  /// The sentence after `error: `.
  package var message: String { "invalid \(noun) '\(text)' for '\(name)': expected \(expected)" }
}
