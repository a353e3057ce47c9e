/// Something that declares a positional argument: a plain ``ArgumentSpec``, or a typed
/// ``Argument``.
package protocol ArgumentDeclaration: Sendable {
  /// The argument as the parser, help and completion see it.
  var argumentSpec: ArgumentSpec { get }
}

extension ArgumentSpec: ArgumentDeclaration {
  package var argumentSpec: ArgumentSpec { self }
}
