import CommandLineKit
import SessionStorage
import SessionViewModels

extension SessionCtl {
  /// `sessionctl status`: the state and head cursor, read in one transaction, and the
  /// greeting an app would show: the snapshot's state is injected into a
  /// `GreetingViewModel`, which needs nothing more than `SessionProviding`.
  struct Status: SessionCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "status", abstract: "Show who is signed in, and the head cursor.",
      discussion: """
        Reads the file without writing to it; a missing file is reported (exit 1) and not
        created.
        """)

    func run(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      let store = try context.openForReading(location)
      let snapshot = try store.snapshot()
      let greeting = await MainActor.run { GreetingViewModel(session: snapshot.state).greeting }
      try context.output.write(
        try context.presenter.status(snapshot, path: location.display, greeting: greeting))
      return .success
    }
  }
}

extension Presenter {
  /// `status`: the state, its cursor and the file; people also get the greeting.
  func status(_ snapshot: SessionSnapshot, path: String, greeting: String) throws -> [String] {
    if json { return [try JSONValue.status(snapshot).encoded] }
    let state = snapshot.state
    return table([
      ("greeting", Self.display(greeting)),
      ("username", Self.display(state.username)),
      ("logged in", state.isLoggedIn ? "yes" : "no"),
      ("updated", Timestamp.format(state.updatedAt)),
      ("cursor", snapshot.cursor.description),
      ("database", Self.display(path)),
    ])
  }
}
