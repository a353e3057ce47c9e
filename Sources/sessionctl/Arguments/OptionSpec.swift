/// A named option of a command: a flag (`--json`) or an option that takes a value
/// (`--limit <n>`), with an optional one-letter short name (`-n`).
struct OptionSpec: Sendable, Equatable {
  /// Whether the option takes a value.
  enum Kind: Sendable, Equatable {
    /// Present or absent; `--flag=value` is refused.
    case flag
    /// Takes one value, shown in help as `<placeholder>`.
    case value(placeholder: String)
  }

  /// The long name without its dashes: `db` for `--db`.
  var name: String
  /// The short name without its dash: `n` for `-n`.
  var short: Character?
  /// A flag or a value option.
  var kind: Kind
  /// One line for the help text.
  var help: String
  /// Whether the subcommands of the declaring command accept it too (global options).
  var isInherited: Bool
  /// Whether shell completion offers file names for the value.
  var completesFiles: Bool

  init(
    _ name: String, short: Character? = nil, _ kind: Kind = .flag, help: String, isInherited: Bool = false,
    completesFiles: Bool = false
  ) {
    self.name = name
    self.short = short
    self.kind = kind
    self.help = help
    self.isInherited = isInherited
    self.completesFiles = completesFiles
  }

  /// `--name`.
  var longSpelling: String { "--" + name }

  /// `-x`, when there is a short name.
  var shortSpelling: String? { short.map { "-" + String($0) } }

  /// Whether the option takes a value.
  var takesValue: Bool { kind != .flag }

  /// `--limit <n>` or `--json`: how usage lines and messages show it.
  var synopsis: String {
    switch kind {
    case .flag: longSpelling
    case .value(let placeholder): "\(longSpelling) <\(placeholder)>"
    }
  }

  /// The built-in `-h, --help` every command has.
  static let help = OptionSpec("help", short: "h", help: "Show help information.")
}
