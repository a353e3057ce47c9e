/// A command as one type: its spec, and an initializer that reads its typed options and
/// arguments from a parsed line. Tools add how a command runs (and with what) in a
/// protocol of their own, and keep one array of command types as the only list of their
/// commands; the root's spec takes the subcommands from it.
package protocol ParsableCommand: Sendable {
  /// The name, help, options and arguments.
  static var spec: CommandSpec { get }

  /// Reads the command's values from `arguments`, which ``ArgumentParser`` produced for it.
  /// - Throws: ``InvalidValue`` for a value its type refuses, ``UsageError`` for a rule
  ///   the spec cannot state (e.g. two options that exclude each other).
  init(_ arguments: ParsedArguments) throws
}
