import CommandLineKit

extension SessionCtl {
  /// `sessionctl completion bash`: the completion script, generated from ``SessionCtl/root``.
  struct Completion: SessionCommand {
    static let shell = Argument<String>("shell", help: "The shell: bash.", completion: .words(["bash"]))

    static let spec = CommandSpec(
      "completion", abstract: "Print a shell completion script.",
      discussion: "Load it with: source <(sessionctl completion bash)", arguments: [shell])

    init(_ arguments: ParsedArguments) throws {
      let shell = try arguments.required(Self.shell)
      guard shell == "bash" else {
        throw arguments.usageError(.invalid("unsupported shell '\(shell)' (supported: bash)"))
      }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      try context.output.write(BashCompletion(root: SessionCtl.root).script, terminated: false)
      return .success
    }
  }
}
