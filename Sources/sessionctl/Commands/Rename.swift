import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl rename <username>`: the change, or "no change" when the username is
  /// already that.
  struct Rename: SessionCommand {
    static let username = Argument<String>("username", help: "The new username (same rules as 'login').")

    static let spec = CommandSpec(
      "rename", abstract: "Change the username; the login state stays as it is.", arguments: [username])

    /// The new username, as typed.
    let username: String

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      let name = try Username.validated(username)
      let store = try context.openForWriting(location)
      return try context.printWrite(try await store.rename(to: name), store) {
        "the username is already \(Presenter.display(name))"
      }
    }
  }
}
