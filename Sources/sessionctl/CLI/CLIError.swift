/// A failure sessionctl reports itself: a sentence for stderr and the exit status.
struct CLIError: Error, Sendable, Equatable {
  /// The exit status.
  var exitCode: ExitCode
  /// The sentence after `sessionctl: error: `.
  var message: String

  init(_ exitCode: ExitCode, _ message: String) {
    self.exitCode = exitCode
    self.message = message
  }

  /// A value the user typed is wrong (exit 65).
  static func invalidInput(_ message: String) -> CLIError { CLIError(.invalidInput, message) }
}
