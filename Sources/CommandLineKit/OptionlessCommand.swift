/// A command with no options or arguments of its own (the tool may still read its global
/// options): it is built with `init()`, and gets ``ParsableCommand/init(_:)`` for free.
package protocol OptionlessCommand: ParsableCommand {
  init()
}

extension OptionlessCommand {
  package init(_ arguments: ParsedArguments) { self.init() }
}
