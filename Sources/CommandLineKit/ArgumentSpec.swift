/// A positional argument of a command, such as `<username>`.
package struct ArgumentSpec: Sendable, Equatable {
  /// What shell completion offers for an argument.
  package enum Completion: Sendable, Equatable {
    /// Nothing.
    case none
    /// These words.
    case words([String])
    /// The names of the tool's commands (for `help <command>`).
    case commandNames
  }

  /// The placeholder without angle brackets.
  package var name: String
  /// One line for the help text.
  package var help: String
  /// Whether the argument may be left out.
  package var isOptional: Bool
  /// Whether it takes every remaining word (only the last argument can).
  package var isRepeating: Bool
  /// What shell completion offers for it.
  package var completion: Completion

  package init(
    _ name: String, help: String, isOptional: Bool = false, isRepeating: Bool = false,
    completion: Completion = .none
  ) {
    self.name = name
    self.help = help
    self.isOptional = isOptional
    self.isRepeating = isRepeating
    self.completion = completion
  }

  /// `<name>` as messages name it.
  package var label: String { "<\(name)>" }

  /// `<name>`, `[<name>]`, `<name> ...` or `[<name> ...]`.
  package var synopsis: String {
    let word = isRepeating ? label + " ..." : label
    return isOptional ? "[\(word)]" : word
  }
}
