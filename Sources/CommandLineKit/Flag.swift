/// An option that is present or absent, such as `--json`: `parsed[Self.json]` is a `Bool`.
package struct Flag: OptionDeclaration {
  package let optionSpec: OptionSpec

  /// - Parameters:
  ///   - name: the long name without dashes (`json` for `--json`).
  ///   - isInherited: whether the subcommands of the declaring command accept it too.
  package init(_ name: String, short: Character? = nil, help: String, isInherited: Bool = false) {
    optionSpec = OptionSpec(name, short: short, help: help, isInherited: isInherited)
  }
}
