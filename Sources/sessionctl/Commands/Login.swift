import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl login <username>`: the change, or "no change" when that user is already
  /// signed in.
  struct Login: SessionCommand {
    static let username = Argument<String>("username", help: "The user to sign in as.")

    static let spec = CommandSpec(
      "login", abstract: "Sign in as <username>.",
      discussion: """
        A username is 1 to 256 characters (at most 1024 bytes in UTF-8), with no control
        characters, no invisible or bidirectional format characters (U+200B, U+FEFF,
        U+202E...; emoji keep their joiners), no unassigned or private-use code points,
        and no leading or trailing whitespace; it is stored in Unicode NFC. Signing in
        as the user who is already signed in changes nothing and prints "no change". Use
        '--' before a username that starts with a dash.
        """,
      arguments: [username])

    /// Who signs in, as typed.
    let username: String

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      let name = try Username.validated(username)  // before the file is created
      let store = try context.openForWriting(location)
      return try context.printWrite(try await store.logIn(as: name), store) {
        "already logged in as \(Presenter.display(name))"
      }
    }
  }
}
