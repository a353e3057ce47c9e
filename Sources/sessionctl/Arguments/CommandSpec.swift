/// What a command accepts and how its help reads: the input of ``ArgumentParser``,
/// ``HelpFormatter`` and ``BashCompletion``. Commands nest: the root command's
/// subcommands are the tool's commands.
struct CommandSpec: Sendable {
  /// The word that selects the command (the tool's name for the root).
  var name: String
  /// One sentence: the OVERVIEW line and the SUBCOMMANDS entry.
  var abstract: String
  /// Paragraphs shown after the overview in `--help`.
  var discussion: String
  /// Positional arguments, in order.
  var arguments: [ArgumentSpec]
  /// Options, in the order help lists them (`-h, --help` is added automatically).
  var options: [OptionSpec]
  /// Nested commands.
  var subcommands: [CommandSpec]
  /// Replaces the generated options part of the usage line, e.g. `(--keep <n> | --before <cursor>)`.
  var usageOverride: String?

  init(
    _ name: String, abstract: String, discussion: String = "", arguments: [ArgumentSpec] = [],
    options: [OptionSpec] = [], subcommands: [CommandSpec] = [], usageOverride: String? = nil
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.arguments = arguments
    self.options = options
    self.subcommands = subcommands
    self.usageOverride = usageOverride
  }

  /// The subcommand called `name`.
  func subcommand(named name: String) -> CommandSpec? {
    subcommands.first { $0.name == name }
  }

  /// The command at `path` below this one (`[]` is this command).
  func descendant(at path: some Collection<String>) -> CommandSpec? {
    guard let first = path.first else { return self }
    return subcommand(named: first)?.descendant(at: path.dropFirst())
  }

  /// The commands from this one down to `path`, both included; nil if `path` leaves the tree.
  func chain(to path: [String]) -> [CommandSpec]? {
    var chain = [self]
    for name in path {
      guard let next = chain[chain.count - 1].subcommand(named: name) else { return nil }
      chain.append(next)
    }
    return chain
  }
}

extension Array where Element == CommandSpec {
  /// The options in scope for the last command of a chain: its own, the inherited options
  /// of the commands above it, and `-h, --help`; nearest declaration first.
  var optionsInScope: [OptionSpec] {
    guard let last else { return [.help] }
    var scope = last.options
    for ancestor in dropLast().reversed() {
      scope += ancestor.options.filter { $0.isInherited && !scope.map(\.name).contains($0.name) }
    }
    return scope + [.help]
  }
}
