/// What ``ArgumentParser`` found: the command chosen, its options and its arguments, as
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
  package func contains(_ option: some OptionDeclaration) -> Bool {
    let name = option.optionSpec.name
    return option.optionSpec.takesValue ? values[name] != nil : flags.contains(name)
  }

  /// Whether `flag` was given.
  package subscript(_ flag: Flag) -> Bool { flags.contains(flag.optionSpec.name) }

  /// The value of `option`, if it was given.
  /// - Throws: ``InvalidValue`` when its type refuses the text.
  package subscript<Value>(_ option: Option<Value>) -> Value? {
    get throws(InvalidValue) {
      try values[option.optionSpec.name].map { text throws(InvalidValue) in
        try Self.convert(text, for: option.optionSpec.longSpelling)
      }
    }
  }

  /// The value of `argument`, if it was given (the first one, for a repeating argument).
  /// - Throws: ``InvalidValue`` when its type refuses the text.
  package subscript<Value>(_ argument: Argument<Value>) -> Value? {
    get throws(InvalidValue) { try values(of: argument).first }
  }

  /// Every value given for `argument`, in order.
  /// - Throws: ``InvalidValue`` for the first one its type refuses.
  package func values<Value>(of argument: Argument<Value>) throws(InvalidValue) -> [Value] {
    try (argumentsByName[argument.argumentSpec.name] ?? []).map { text throws(InvalidValue) in
      try Self.convert(text, for: argument.argumentSpec.label)
    }
  }

  /// The value of an option the command cannot do without.
  /// - Throws: ``UsageError`` when it is missing, ``InvalidValue`` when its type refuses it.
  package func required<Value>(_ option: Option<Value>) throws -> Value {
    guard let value = try self[option] else { throw usageError(.missingOption(option.optionSpec.synopsis)) }
    return value
  }

  /// The value of a required argument (the parser has already refused a line without it).
  /// - Throws: ``UsageError`` when it is missing, ``InvalidValue`` when its type refuses it.
  package func required<Value>(_ argument: Argument<Value>) throws -> Value {
    guard let value = try self[argument] else {
      throw usageError(.missingArgument(argument.argumentSpec.name))
    }
    return value
  }

  /// A usage error about the command that was parsed.
  package func usageError(_ problem: UsageError.Problem) -> UsageError {
    UsageError(problem, commandPath: commandPath)
  }

  private static func convert<Value: ExpressibleByArgument>(_ text: String, for name: String)
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
