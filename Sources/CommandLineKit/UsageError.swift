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

  /// What was wrong.
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
