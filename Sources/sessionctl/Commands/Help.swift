import CommandLineKit

extension SessionCtl {
  /// `sessionctl help [<command>]`: the help page of the tool or of one command.
  struct Help: SessionCommand {
    static let command = Argument<String>(
      "command", help: "The command to explain.", isOptional: true, completion: .commandNames)

    static let spec = CommandSpec("help", abstract: "Show help for a command.", arguments: [command])

    /// The command to explain; `[]`: the tool.
    let path: [String]

    init(_ arguments: ParsedArguments) throws {
      guard let topic = try arguments[Self.command] else {
        path = []
        return
      }
      guard SessionCtl.root.subcommand(named: topic) != nil else {
        let names = SessionCtl.root.visibleSubcommands.map(\.name)
        throw arguments.usageError(
          .unknownCommand(topic, suggestion: NearestMatch.suggestion(for: topic, among: names)))
      }
      path = [topic]
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      try context.output.write(SessionCtl.help(for: path), terminated: false)
      return .success
    }
  }
}
