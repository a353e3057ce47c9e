/// A positional argument of a command, such as `<username>`.
struct ArgumentSpec: Sendable, Equatable {
  /// The placeholder without angle brackets.
  var name: String
  /// One line for the help text.
  var help: String
  /// Whether the argument may be left out.
  var isOptional: Bool
  /// The words shell completion offers for it.
  var completions: [String]

  init(_ name: String, help: String, isOptional: Bool = false, completions: [String] = []) {
    self.name = name
    self.help = help
    self.isOptional = isOptional
    self.completions = completions
  }

  /// `<name>` or `[<name>]`.
  var synopsis: String { isOptional ? "[<\(name)>]" : "<\(name)>" }
}
