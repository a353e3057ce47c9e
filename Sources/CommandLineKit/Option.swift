/// An option that takes a value of a type, declared once and used both in the command's
/// spec and to read the value: `parsed[Self.limit]` is an `Int?`.
///
/// ```swift
/// static let limit = Option<Int>("limit", short: "n", placeholder: "n", help: "Stop after this many.")
/// ```
package struct Option<Value: ExpressibleByArgument>: OptionDeclaration {
  package let optionSpec: OptionSpec

  /// - Parameters:
  ///   - name: the long name without dashes (`limit` for `--limit`).
  ///   - placeholder: the word in `--limit <n>`; the name when nil.
  ///   - isInherited: whether the subcommands of the declaring command accept it too.
  ///   - isRequired: shown without brackets in usage lines; read it with
  ///     ``ParsedArguments/required(_:)``.
  package init(
    _ name: String, short: Character? = nil, placeholder: String? = nil, help: String,
    isInherited: Bool = false, completesFiles: Bool = false, isRequired: Bool = false
  ) {
    optionSpec = OptionSpec(
      name, short: short, .value(placeholder: placeholder ?? name), help: help, isInherited: isInherited,
      completesFiles: completesFiles, isRequired: isRequired)
  }
}
