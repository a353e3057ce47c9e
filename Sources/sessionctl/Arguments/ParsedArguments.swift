/// What ``ArgumentParser`` found: the command chosen, its options and its arguments,
/// still as text. Turning values into numbers or cursors is the caller's job.
struct ParsedArguments: Sendable, Equatable {
  /// The subcommand names after the tool's name: `["watch"]`; `[]` for the root.
  var commandPath: [String] = []
  /// The flags that were given, by long name.
  var flags: Set<String> = []
  /// The value of each value option that was given, by long name.
  var values: [String: String] = [:]
  /// The positional arguments, in order.
  var arguments: [String] = []
  /// Whether `-h`/`--help` appeared; the rest of the line was then not validated.
  var helpRequested = false

  /// Whether the flag `name` was given.
  func flag(_ name: String) -> Bool { flags.contains(name) }

  /// The value of the option `name`, if it was given.
  func value(_ name: String) -> String? { values[name] }
}
