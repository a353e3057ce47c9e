/// What a command accepts and how its help reads: the input of ``ArgumentParser``,
/// ``HelpFormatter`` and ``BashCompletion``. Commands nest: the root command's
/// subcommands are the tool's commands.
package struct CommandSpec: Sendable {
  /// The word that selects the command (the tool's name for the root).
  package var name: String
  /// One sentence: the OVERVIEW line and the SUBCOMMANDS entry.
  package var abstract: String
  /// Paragraphs shown after the overview in `--help`.
  package var discussion: String
  /// Positional arguments, in order.
  package var arguments: [ArgumentSpec]
  /// Options, in the order help lists them (`-h, --help` is added automatically).
  package var options: [OptionSpec]
  /// Nested commands.
  package var subcommands: [CommandSpec]
  /// Replaces the generated options part of the usage line, e.g. `(--keep <n> | --before <cursor>)`.
  package var usageOverride: String?
  /// Whether help, completion and suggestions leave the command out (it still runs when
  /// named): commands a tool starts itself, such as its own child processes.
  package var isHidden: Bool

  /// A command; `options` and `arguments` take typed declarations (``Option``, ``Flag``,
  /// ``Argument``) as well as plain specs.
  package init(
    _ name: String, abstract: String, discussion: String = "", arguments: [any ArgumentDeclaration] = [],
    options: [any OptionDeclaration] = [], subcommands: [CommandSpec] = [], usageOverride: String? = nil,
    isHidden: Bool = false
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.arguments = arguments.map(\.argumentSpec)
    self.options = options.map(\.optionSpec)
    self.subcommands = subcommands
    self.usageOverride = usageOverride
    self.isHidden = isHidden
  }

  /// The subcommand called `name`, hidden or not.
  package func subcommand(named name: String) -> CommandSpec? {
    subcommands.first { $0.name == name }
  }

  /// The subcommands help, completion and suggestions show.
  package var visibleSubcommands: [CommandSpec] { subcommands.filter { !$0.isHidden } }

  /// The commands from this one down to `path`, both included; nil if `path` leaves the tree.
  package func chain(to path: [String]) -> [CommandSpec]? {
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
  package var optionsInScope: [OptionSpec] {
    guard let last else { return [.help] }
    var scope = last.options
    for ancestor in dropLast().reversed() {
      scope += ancestor.options.filter { $0.isInherited && !scope.map(\.name).contains($0.name) }
    }
    return scope + [.help]
  }
}
