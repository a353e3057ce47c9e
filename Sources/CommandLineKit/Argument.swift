/// A positional argument of a type, declared once and used both in the command's spec and
/// to read the value: `try parsed.required(Self.username)` is a `String`.
package struct Argument<Value: ExpressibleByArgument>: ArgumentDeclaration {
  package let argumentSpec: ArgumentSpec

  /// - Parameters:
  ///   - name: the placeholder without angle brackets (`username` for `<username>`).
  ///   - isRepeating: takes every remaining word (the last argument only); read the values
  ///     with ``ParsedArguments/values(of:)``.
  package init(
    _ name: String, help: String, isOptional: Bool = false, isRepeating: Bool = false,
    completion: ArgumentSpec.Completion = .none
  ) {
    argumentSpec = ArgumentSpec(
      name, help: help, isOptional: isOptional, isRepeating: isRepeating, completion: completion)
  }
}
