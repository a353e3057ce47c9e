/// A named option of a command: a flag (`--json`) or an option that takes a value
/// (`--limit <n>`), with an optional one-letter short name (`-n`).
package struct OptionSpec: Sendable, Equatable {
  /// Whether the option takes a value.
  package enum Kind: Sendable, Equatable {
    /// Present or absent; `--flag=value` is refused.
    case flag
    /// Takes one value, shown in help as `<placeholder>`.
    case value(placeholder: String)
  }

  /// The long name without its dashes: `db` for `--db`.
  package var name: String
  /// The short name without its dash: `n` for `-n`.
  package var short: Character?
  /// A flag or a value option.
  package var kind: Kind
  /// One line for the help text.
  package var help: String
  /// Whether the subcommands of the declaring command accept it too (global options).
  package var isInherited: Bool
  /// Whether shell completion offers file names for the value.
  package var completesFiles: Bool
  /// Whether the command needs it: usage lines show it without brackets.
  package var isRequired: Bool

  package init(
    _ name: String, short: Character? = nil, _ kind: Kind = .flag, help: String, isInherited: Bool = false,
    completesFiles: Bool = false, isRequired: Bool = false
  ) {
    self.name = name
    self.short = short
    self.kind = kind
    self.help = help
    self.isInherited = isInherited
    self.completesFiles = completesFiles
    self.isRequired = isRequired
  }

  /// `--name`.
  package var longSpelling: String { "--" + name }

  /// `-x`, when there is a short name.
  package var shortSpelling: String? { short.map { "-" + String($0) } }

  /// Whether the option takes a value.
  package var takesValue: Bool { kind != .flag }

  /// `--limit <n>` or `--json`: how usage lines and messages show it.
  package var synopsis: String {
    switch kind {
    case .flag: longSpelling
    case .value(let placeholder): "\(longSpelling) <\(placeholder)>"
    }
  }

  /// The built-in `-h, --help` every command has.
  package static let help = OptionSpec("help", short: "h", help: "Show help information.")
}
