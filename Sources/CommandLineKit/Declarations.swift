/// What a command accepts and how its help reads: the input of ``CommandLineParser``,
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
  package var arguments: [any PositionalArgument]
  /// Options, in the order help lists them (`-h, --help` is added automatically).
  package var options: [any NamedOption]
  /// Nested commands.
  package var subcommands: [CommandSpec]
  /// Replaces the generated options part of the usage line, e.g. `(--keep <n> | --before <cursor>)`.
  package var usageOverride: String?
  /// Whether help, completion and suggestions leave the command out (it still runs when
  /// named): commands a tool starts itself, such as its own child processes.
  package var isHidden: Bool

  /// A command that accepts `arguments` and `options`: the very declarations it reads its
  /// values with.
  package init(
    _ name: String, abstract: String, discussion: String = "", arguments: [any PositionalArgument] = [],
    options: [any NamedOption] = [], subcommands: [CommandSpec] = [], usageOverride: String? = nil,
    isHidden: Bool = false
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.arguments = arguments
    self.options = options
    self.subcommands = subcommands
    self.usageOverride = usageOverride
    self.isHidden = isHidden
  }

  /// The built-in `-h, --help` every command has.
  package static let helpFlag = CommandLineFlag("help", short: "h", help: "Show help information.")

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
  package var optionsInScope: [any NamedOption] {
    guard let last else { return [CommandSpec.helpFlag] }
    var scope = last.options
    for ancestor in dropLast().reversed() {
      scope += ancestor.options.filter { option in
        option.isInherited && !scope.contains { $0.name == option.name }
      }
    }
    return scope + [CommandSpec.helpFlag]
  }
}

/// A command as one type: its spec, and an initializer that reads its typed options and
/// arguments from a parsed line. Tools add how a command runs (and with what) in a
/// protocol of their own, and keep one array of command types as the only list of their
/// commands; the root's spec takes the subcommands from it.
package protocol TypedCommand: Sendable {
  /// The name, help, options and arguments.
  static var spec: CommandSpec { get }

  /// Reads the command's values from `arguments`, which ``CommandLineParser`` produced for it.
  /// - Throws: ``InvalidValue`` for a value its type refuses, ``UsageError`` for a rule
  ///   the spec cannot state (e.g. two options that exclude each other).
  init(_ arguments: ParsedArguments) throws
}

/// A command with no options or arguments of its own (the tool may still read its global
/// options): it is built with `init()`, and gets ``TypedCommand/init(_:)`` for free.
package protocol OptionlessCommand: TypedCommand {
  init()
}

extension OptionlessCommand {
  package init(_ arguments: ParsedArguments) { self.init() }
}

/// A named option, declared once: the command lists it in its spec and reads its typed value
/// with it (`parsed[Self.limit]` is an `Int?`). A `CommandLineOption<Bool>` is a
/// ``CommandLineFlag``, present or absent (`parsed[Self.json]` is a `Bool`); any other option
/// takes one value.
///
/// ```swift
/// static let limit = CommandLineOption<Int>(
///   "limit", short: "n", placeholder: "n", help: "Stop after this many.")
/// static let json = CommandLineFlag("json", short: "j", help: "Print JSON Lines.")
/// ```
package struct CommandLineOption<Value: Sendable>: NamedOption {
  package let name: String
  package let short: Character?
  package let placeholder: String?
  package let help: String
  package let isInherited: Bool
  package let completesFiles: Bool
  package let isRequired: Bool
}

/// An option that is present or absent, such as `--json`.
package typealias CommandLineFlag = CommandLineOption<Bool>

extension CommandLineOption where Value: CommandLineValue {
  /// An option that takes a value.
  /// - Parameters:
  ///   - name: the long name without dashes (`limit` for `--limit`).
  ///   - placeholder: the word in `--limit <n>`; the name when nil.
  ///   - isInherited: whether the subcommands of the declaring command accept it too.
  ///   - completesFiles: whether shell completion offers file names for the value.
  ///   - isRequired: shown without brackets in usage lines; read it with
  ///     ``ParsedArguments/required(_:)``.
  package init(
    _ name: String, short: Character? = nil, placeholder: String? = nil, help: String,
    isInherited: Bool = false, completesFiles: Bool = false, isRequired: Bool = false
  ) {
    self.init(
      name: name, short: short, placeholder: placeholder ?? name, help: help, isInherited: isInherited,
      completesFiles: completesFiles, isRequired: isRequired)
  }
}

extension CommandLineOption where Value == Bool {
  /// A flag; `--flag=value` is refused, and giving it twice is the same as once.
  /// - Parameters:
  ///   - name: the long name without dashes (`json` for `--json`).
  ///   - isInherited: whether the subcommands of the declaring command accept it too.
  package init(_ name: String, short: Character? = nil, help: String, isInherited: Bool = false) {
    self.init(
      name: name, short: short, placeholder: nil, help: help, isInherited: isInherited, completesFiles: false,
      isRequired: false)
  }
}

/// What the parser, help and completion read of a ``CommandLineOption`` whatever the type of its value:
/// the element of ``CommandSpec/options``.
package protocol NamedOption: Sendable {
  /// The long name without its dashes: `db` for `--db`.
  var name: String { get }
  /// The short name without its dash: `n` for `-n`.
  var short: Character? { get }
  /// The word in `--limit <n>`; nil for a flag.
  var placeholder: String? { get }
  /// One line for the help text.
  var help: String { get }
  /// Whether the subcommands of the declaring command accept it too (global options).
  var isInherited: Bool { get }
  /// Whether shell completion offers file names for the value.
  var completesFiles: Bool { get }
  /// Whether the command needs it: usage lines show it without brackets.
  var isRequired: Bool { get }
}

extension NamedOption {
  /// `--name`.
  package var longSpelling: String { "--" + name }

  /// `-x`, when there is a short name.
  package var shortSpelling: String? { short.map { "-" + String($0) } }

  /// Whether the option takes a value (it is no flag).
  package var takesValue: Bool { placeholder != nil }

  /// `--limit <n>` or `--json`: how usage lines and messages show it.
  package var synopsis: String { longSpelling + (placeholder.map { " <\($0)>" } ?? "") }
}

/// A positional argument of a command, such as `<username>`, declared once: the command lists
/// it in its spec and reads its typed value with it (`try parsed.required(Self.username)`).
package struct CommandLineArgument<Value: CommandLineValue>: PositionalArgument {
  package let name: String
  package let help: String
  package let isOptional: Bool
  package let isRepeating: Bool
  package let completion: ArgumentCompletion

  /// - Parameters:
  ///   - name: the placeholder without angle brackets (`username` for `<username>`).
  ///   - isRepeating: takes every remaining word (the last argument only); read the values
  ///     with ``ParsedArguments/values(of:)``.
  package init(
    _ name: String, help: String, isOptional: Bool = false, isRepeating: Bool = false,
    completion: ArgumentCompletion = .none
  ) {
    self.name = name
    self.help = help
    self.isOptional = isOptional
    self.isRepeating = isRepeating
    self.completion = completion
  }
}

/// What the parser, help and completion read of a ``CommandLineArgument`` whatever the type of its
/// value: the element of ``CommandSpec/arguments``.
package protocol PositionalArgument: Sendable {
  /// The placeholder without angle brackets.
  var name: String { get }
  /// One line for the help text.
  var help: String { get }
  /// Whether the argument may be left out.
  var isOptional: Bool { get }
  /// Whether it takes every remaining word (only the last argument can).
  var isRepeating: Bool { get }
  /// What shell completion offers for it.
  var completion: ArgumentCompletion { get }
}

extension PositionalArgument {
  /// `<name>` as messages name it.
  package var label: String { "<\(name)>" }

  /// `<name>`, `[<name>]`, `<name> ...` or `[<name> ...]`.
  package var synopsis: String {
    let word = isRepeating ? label + " ..." : label
    return isOptional ? "[\(word)]" : word
  }
}

/// What shell completion offers for a positional argument.
package enum ArgumentCompletion: Sendable, Equatable {
  case none
  case words([String])
  /// The names of the tool's commands (for `help <command>`).
  case commandNames
}

/// A type whose values can be typed on a command line, as the value of a
/// ``CommandLineOption`` or a ``CommandLineArgument``; a refusal says what was expected,
/// and ``ParsedArguments`` adds what was typed and for which option.
package protocol CommandLineValue: Sendable {
  /// The value `argument` spells.
  /// - Throws: ``InvalidValue`` saying what a valid value looks like.
  init(argument: String) throws(InvalidValue)
}

extension String: CommandLineValue {
  package init(argument: String) { self = argument }
}

extension Int: CommandLineValue {
  /// A count: ASCII digits only, so `-1`, `+1` and `1.0` are refused (no command here
  /// takes a negative number), up to `Int.max`, which is also SQLite's largest integer
  /// (a larger one is refused naming the range).
  package init(argument: String) throws(InvalidValue) {
    guard Self.isDigits(argument) else { throw InvalidValue(expected: "a whole number ≥ 0") }
    guard let value = Int(argument) else { throw InvalidValue(expected: Self.range) }
    self = value
  }

  /// What a count too large for `Int` is told: `a whole number from 0 to 9223372036854775807`.
  package static let range = "a whole number from 0 to \(Int.max)"

  /// Whether `text` is one or more ASCII digits.
  package static func isDigits(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
  }
}

extension UInt64: CommandLineValue {
  /// ASCII digits, up to 2^64 − 1 (seeds).
  package init(argument: String) throws(InvalidValue) {
    guard Int.isDigits(argument), let value = UInt64(argument) else {
      throw InvalidValue(expected: "a whole number from 0 to \(UInt64.max)")
    }
    self = value
  }
}

extension Double: CommandLineValue {
  /// A finite number ≥ 0 (durations): `600`, `2.5`.
  package init(argument: String) throws(InvalidValue) {
    guard let value = Double(argument), value.isFinite, value >= 0 else {
      throw InvalidValue(expected: "a number ≥ 0")
    }
    self = value
  }
}
