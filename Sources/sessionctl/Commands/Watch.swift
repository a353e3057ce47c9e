import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl watch`: a snapshot line (unless `--since` is given), then one line per
  /// change as it commits, until `--limit` changes, SIGINT/SIGTERM, or the output's reader
  /// goes away.
  struct Watch: SessionCommand {
    static let spec = CommandSpec(
      "watch", abstract: "Print changes as they commit, after a snapshot of the current state.",
      discussion: """
        The first line is the state and its cursor; every change committed after it
        follows, one line each, whichever process or tool made it (the sqlite3 shell
        included). With --since, the changes after that cursor come first and there is no
        snapshot line. Stops after --limit changes (exit 0), on SIGINT (exit 130), on
        SIGTERM (exit 143), always after a whole line, and quietly when the reader of its
        output goes away (exit 0).
        """,
      options: FeedOptions.declarations)

    /// Where to resume (nil: after a snapshot), and after how many changes to exit.
    let feed: FeedOptions

    init(_ arguments: ParsedArguments) throws {
      feed = try FeedOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      let stop = StopSignals.shared
      let listening = stop.listen()
      defer { withExtendedLifetime(listening) {} }
      let store = try context.openForReading(location)
      let presenter = context.presenter
      let output = context.output
      let changes: SessionSubscription
      if let since = feed.since {
        changes = try store.changes(from: since)
      } else {
        let snapshot = try store.snapshotAndChanges()
        try output.write(
          try presenter.snapshot(SessionSnapshot(state: snapshot.state, cursor: snapshot.cursor)))
        changes = snapshot.changes
      }
      if feed.limit == 0 { return .success }
      // Never silently blind: when file notifications cannot be set up, say once that
      // changes arrive by polling, and why.
      if case .polling(let interval, let reason) = changes.wakeMode {
        try context.errors.write(
          "sessionctl: warning: cannot watch the file for changes (\(reason)); polling every \(interval)")
      }
      // Aligned like `history` for the cursors of today; lines cannot be measured ahead.
      let cursorWidth = try store.bounds().head.description.count
      let limit = feed.limit
      let printing = Task { () async throws -> Void in
        var count = 0
        for try await entry in changes {
          try output.write(try presenter.change(entry, cursorWidth: cursorWidth, originWidth: 10))
          count += 1
          if let limit, count >= limit { return }
        }
      }
      stop.onStop { printing.cancel() }
      try await printing.value
      return stop.reason?.exitCode ?? .success
    }
  }
}
