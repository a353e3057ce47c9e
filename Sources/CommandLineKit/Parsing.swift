/// Splits a command line into a command, options and arguments according to a tree of
/// ``CommandSpec``s.
///
/// The rules, like those of git and swift-argument-parser:
/// - Subcommand names come first (`sessionctl watch …`); options may appear anywhere after
///   the command that declares them, and inherited (global) options anywhere at all. A
///   command with both subcommands and arguments takes a word that names no subcommand as
///   its first argument.
/// - `--name value` and `--name=value`; `-n value`, `-nvalue`, and grouped flags `-jh`, whose
///   last member may take a value (`-jn5`, `-jn 5`).
/// - A value is taken from the next word unless that word looks like an option (starts
///   with `-` and a letter, or is `--`); then the value is missing. Write `--name=-x` for a
///   value that starts with a dash. Words like `-1` are values and arguments, never options.
/// - `--` ends the options: every later word is a positional argument.
/// - A value option given twice is an error; a flag given twice is the same as once.
/// - `-h`/`--help` anywhere (before `--`) asks for the help of the deepest command named,
///   and the rest of the line is then not validated.
/// - A command takes as many arguments as it declares; a repeating last one takes the rest.
package struct CommandLineParser: Sendable {
  package let root: CommandSpec

  package init(root: CommandSpec) { self.root = root }

  /// Parses `arguments` (without the tool's own name).
  /// - Throws: the first ``UsageError`` found, unless help was requested.
  package func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
    var state = State(root: root)
    var index = 0
    var optionsEnded = false
    while index < arguments.count {
      let word = arguments[index]
      index += 1
      if !optionsEnded, word == "--" {
        optionsEnded = true
      } else if optionsEnded || !Self.looksLikeOption(word) {
        state.positional(word, afterDoubleDash: optionsEnded)
      } else if word.hasPrefix("--") {
        state.long(word, arguments, &index)
      } else {
        state.shortGroup(word, arguments, &index)
      }
    }
    return try state.finish()
  }

  /// Whether `word` is read as an option: a dash followed by something that is not a digit.
  package static func looksLikeOption(_ word: String) -> Bool {
    guard word.hasPrefix("-"), word.count > 1 else { return false }
    let second = word[word.index(after: word.startIndex)]
    return !second.isNumber
  }
}

extension CommandLineParser {
  /// The parse in progress.
  private struct State {
    var chain: [CommandSpec]
    var result = ParsedArguments()
    var firstError: UsageError?

    init(root: CommandSpec) { chain = [root] }

    var current: CommandSpec { chain[chain.count - 1] }

    mutating func fail(_ problem: UsageError.Problem) {
      if firstError == nil { firstError = UsageError(problem, commandPath: result.commandPath) }
    }

    mutating func positional(_ word: String, afterDoubleDash: Bool) {
      if !afterDoubleDash, !current.subcommands.isEmpty, result.arguments.isEmpty {
        if let subcommand = current.subcommand(named: word) {
          chain.append(subcommand)
          result.commandPath.append(word)
          return
        }
        if current.arguments.isEmpty {
          let suggestion = NearestMatch.suggestion(for: word, among: current.visibleSubcommands.map(\.name))
          fail(.unknownCommand(word, suggestion: suggestion))
        }
      }
      result.arguments.append(word)
    }

    mutating func long(_ word: String, _ arguments: [String], _ index: inout Int) {
      let body = word.dropFirst(2)
      let name: String
      let inline: String?
      if let equals = body.firstIndex(of: "=") {
        name = String(body[..<equals])
        inline = String(body[body.index(after: equals)...])
      } else {
        name = String(body)
        inline = nil
      }
      let scope = chain.optionsInScope
      guard let option = scope.first(where: { $0.name == name }) else {
        let typed = "--" + name
        fail(
          .unknownOption(
            typed, suggestion: NearestMatch.suggestion(for: typed, among: scope.map(\.longSpelling))))
        return
      }
      accept(option, spelled: "--" + name, inline: inline, arguments, &index)
    }

    mutating func shortGroup(_ word: String, _ arguments: [String], _ index: inout Int) {
      let scope = chain.optionsInScope
      var rest = word.dropFirst()
      while let letter = rest.first {
        rest = rest.dropFirst()
        guard let option = scope.first(where: { $0.short == letter }) else {
          let suggestion = scope.first { $0.name.first == letter }?.longSpelling
          fail(.unknownOption("-" + String(letter), suggestion: suggestion))
          return
        }
        if option.takesValue {
          accept(
            option, spelled: "-" + String(letter), inline: rest.isEmpty ? nil : String(rest), arguments,
            &index)
          return
        }
        accept(option, spelled: "-" + String(letter), inline: nil, arguments, &index)
      }
    }

    mutating func accept(
      _ option: any NamedOption, spelled: String, inline: String?, _ arguments: [String], _ index: inout Int
    ) {
      guard option.takesValue else {
        if let inline {
          fail(.unexpectedValue(option: spelled, value: inline))
        } else if option.name == CommandSpec.helpFlag.name {
          result.helpRequested = true
        } else {
          result.flags.insert(option.name)
        }
        return
      }
      let value: String
      if let inline {
        value = inline
      } else if index < arguments.count, !CommandLineParser.looksLikeOption(arguments[index]) {
        value = arguments[index]
        index += 1
      } else {
        fail(.missingValue(option: option.synopsis))
        return
      }
      if result.values[option.name] != nil {
        fail(.repeatedOption(spelled))
      } else {
        result.values[option.name] = value
      }
    }

    mutating func finish() throws(UsageError) -> ParsedArguments {
      if result.helpRequested { return result }
      if let firstError { throw firstError }
      let declared = current.arguments
      if result.arguments.count > declared.count, declared.last?.isRepeating != true {
        throw UsageError(
          .unexpectedArgument(result.arguments[declared.count]), commandPath: result.commandPath)
      }
      if let missing = declared.dropFirst(result.arguments.count).first(where: { !$0.isOptional }) {
        throw UsageError(.missingArgument(missing.name), commandPath: result.commandPath)
      }
      for (position, argument) in declared.enumerated() where position < result.arguments.count {
        let taken = argument.isRepeating ? result.arguments[position...] : [result.arguments[position]]
        result.argumentsByName[argument.name] = Array(taken)
      }
      return result
    }
  }
}

/// What ``CommandLineParser`` found: the command chosen, its options and its arguments, as
/// text. Commands read typed values through their declarations: `parsed[Self.limit]`,
/// `parsed[Self.json]`, `try parsed.required(Self.username)`.
package struct ParsedArguments: Sendable, Equatable {
  /// The subcommand names after the tool's name: `["watch"]`; `[]` for the root.
  package var commandPath: [String] = []
  /// The flags that were given, by long name.
  package var flags: Set<String> = []
  /// The value of each value option that was given, by long name.
  package var values: [String: String] = [:]
  /// The positional arguments, in order.
  package var arguments: [String] = []
  /// The positional arguments by the name of the argument that took them (a repeating
  /// argument takes several).
  package var argumentsByName: [String: [String]] = [:]
  /// Whether `-h`/`--help` appeared; the rest of the line was then not validated.
  package var helpRequested = false

  package init() {}

  /// Whether `option` was given, whatever its value.
  package func contains(_ option: some NamedOption) -> Bool {
    option.takesValue ? values[option.name] != nil : flags.contains(option.name)
  }

  /// Whether `flag` was given.
  package subscript(_ flag: CommandLineFlag) -> Bool { flags.contains(flag.name) }

  /// The value of `option`, if it was given.
  /// - Throws: ``InvalidValue`` when its type refuses the text.
  package subscript<Value: CommandLineValue>(_ option: CommandLineOption<Value>) -> Value? {
    get throws(InvalidValue) {
      try values[option.name].map { text throws(InvalidValue) in
        try Self.convert(text, for: option.longSpelling)
      }
    }
  }

  /// The value of `argument`, if it was given (the first one, for a repeating argument).
  /// - Throws: ``InvalidValue`` when its type refuses the text.
  package subscript<Value>(_ argument: CommandLineArgument<Value>) -> Value? {
    get throws(InvalidValue) { try values(of: argument).first }
  }

  /// Every value given for `argument`, in order.
  /// - Throws: ``InvalidValue`` for the first one its type refuses.
  package func values<Value>(of argument: CommandLineArgument<Value>) throws(InvalidValue) -> [Value] {
    try (argumentsByName[argument.name] ?? []).map { text throws(InvalidValue) in
      try Self.convert(text, for: argument.label)
    }
  }

  /// The value of an option the command cannot do without.
  /// - Throws: ``UsageError`` when it is missing, ``InvalidValue`` when its type refuses it.
  package func required<Value: CommandLineValue>(_ option: CommandLineOption<Value>) throws -> Value {
    guard let value = try self[option] else { throw usageError(.missingOption(option.synopsis)) }
    return value
  }

  /// The value of a required argument (the parser has already refused a line without it).
  /// - Throws: ``UsageError`` when it is missing, ``InvalidValue`` when its type refuses it.
  package func required<Value>(_ argument: CommandLineArgument<Value>) throws -> Value {
    guard let value = try self[argument] else {
      throw usageError(.missingArgument(argument.name))
    }
    return value
  }

  /// A usage error about the command that was parsed.
  package func usageError(_ problem: UsageError.Problem) -> UsageError {
    UsageError(problem, commandPath: commandPath)
  }

  private static func convert<Value: CommandLineValue>(_ text: String, for name: String)
    throws(InvalidValue) -> Value
  {
    do {
      return try Value(argument: text)
    } catch {
      var refusal = error
      refusal.text = text
      refusal.name = name
      throw refusal
    }
  }
}
