import CommandLineKit

extension SessionCtl {
  /// `sessionctl logout`: the change, or "no change" when nobody is signed in.
  struct Logout: SessionCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "logout", abstract: "Sign out (the username is kept).",
      discussion: "Signing out when nobody is signed in changes nothing and prints \"no change\".")

    func run(_ context: CommandContext) async throws -> ExitCode {
      let store = try context.openForWriting(try context.location())
      return try context.printWrite(try await store.logOut(), store) { "nobody is logged in" }
    }
  }
}
