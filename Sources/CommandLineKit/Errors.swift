/// A command line that does not fit the commands' specs. It carries the command it was
/// parsing so the message can show that command's usage line.
package struct UsageError: Error, Sendable, Equatable {
  /// What was wrong.
  package enum Problem: Sendable, Equatable {
    /// An option no command in scope declares, with the closest spelling that exists.
    case unknownOption(String, suggestion: String?)
    /// A word that is not a subcommand, with the closest subcommand name.
    case unknownCommand(String, suggestion: String?)
    /// A value option at the end of the line or followed by another option.
    case missingValue(option: String)
    /// `--flag=value` for a flag.
    case unexpectedValue(option: String, value: String)
    /// A value option given twice.
    case repeatedOption(String)
    /// A required positional argument that is missing.
    case missingArgument(String)
    /// A required option that is missing, as its synopsis (`--db <path>`).
    case missingOption(String)
    /// A positional argument beyond those the command takes.
    case unexpectedArgument(String)
    /// A command with subcommands was given none.
    case missingCommand
    /// Any other rule a command checks itself, in a sentence.
    case invalid(String)
  }

  package var problem: Problem
  /// The command being parsed when it went wrong (`[]` is the root).
  package var commandPath: [String]

  package init(_ problem: Problem, commandPath: [String]) {
    self.problem = problem
    self.commandPath = commandPath
  }

  /// The sentence after `error: `.
  package var message: String {
    switch problem {
    case .unknownOption(let option, let suggestion):
      "unknown option '\(option)'" + (suggestion.map { ". Did you mean '\($0)'?" } ?? "")
    case .unknownCommand(let command, let suggestion):
      "unknown command '\(command)'" + (suggestion.map { ". Did you mean '\($0)'?" } ?? "")
    case .missingValue(let option): "missing value for '\(option)'"
    case .unexpectedValue(let option, let value): "option '\(option)' takes no value (got '\(value)')"
    case .repeatedOption(let option): "option '\(option)' was given more than once"
    case .missingArgument(let name): "missing argument '<\(name)>'"
    case .missingOption(let option): "missing option '\(option)'"
    case .unexpectedArgument(let argument): "unexpected argument '\(argument)'"
    case .missingCommand: "missing command"
    case .invalid(let sentence): sentence
    }
  }
}

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

  /// A refusal, from ``CommandLineValue/init(argument:)``: ``ParsedArguments`` fills
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

/// Picks the spelling a user most likely meant, for "Did you mean …?" suggestions.
package enum NearestMatch {
  /// The candidate closest to `typed`, or nil when none is close enough.
  ///
  /// Close means an edit distance (insertions, deletions, substitutions and swaps of two
  /// neighbours) of at most 1 for names up to 3 characters and 2 beyond, or that the
  /// candidate starts with what was typed (`--lim` → `--limit`). Leading dashes are
  /// ignored when measuring; ties go to the earlier candidate.
  package static func suggestion(for typed: String, among candidates: [String]) -> String? {
    let bare = strippingDashes(typed)
    guard !bare.isEmpty else { return nil }
    let limit = bare.count <= 3 ? 1 : 2
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
      let name = strippingDashes(candidate)
      var distance = editDistance(bare, name)
      if distance > limit, bare.count >= 2, name.hasPrefix(bare) { distance = limit }
      if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
    }
    return best?.candidate
  }

  /// The optimal-string-alignment distance between two strings, by characters.
  package static func editDistance(_ lhs: String, _ rhs: String) -> Int {
    let a = Array(lhs)
    let b = Array(rhs)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { table[i][0] = i }
    for j in 0...b.count { table[0][j] = j }
    for i in 1...a.count {
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          value = min(value, table[i - 2][j - 2] + 1)
        }
        table[i][j] = value
      }
    }
    return table[a.count][b.count]
  }

  private static func strippingDashes(_ text: String) -> String {
    String(text.drop { $0 == "-" })
  }
}
