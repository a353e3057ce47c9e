/// Something that declares an option of a command: a plain ``OptionSpec``, or a typed
/// ``Option`` or ``Flag``, so that a ``CommandSpec`` lists the very declarations its
/// command reads values with.
package protocol OptionDeclaration: Sendable {
  /// The option as the parser, help and completion see it.
  var optionSpec: OptionSpec { get }
}

extension OptionSpec: OptionDeclaration {
  package var optionSpec: OptionSpec { self }
}
