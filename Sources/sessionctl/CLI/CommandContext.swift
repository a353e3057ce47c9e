import SessionStorage
import SessionStoragePostgres

/// What a command runs with: the global options, the environment, and where its output
/// and errors go.
struct CommandContext: Sendable {
  /// `--db` and `--json`.
  var options = GlobalOptions()
  /// The process environment (for `$SESSIONCTL_DB`, `$XDG_DATA_HOME`, `$HOME`).
  let environment: [String: String]
  /// Where results go.
  var output = LineWriter.standardOutput
  /// Where errors go.
  var errors = LineWriter.standardError
  /// What the command made permanent before printing its result (for the message when
  /// the result cannot be written); one per run.
  var commitment = Commitment()

  /// Text or JSON Lines, as `--json` asks.
  var presenter: Presenter { Presenter(json: options.json) }

  /// The database: `--db`, else `$SESSIONCTL_DB`, else the default location.
  /// - Throws: ``CLIError`` when none of them gives a path.
  func location() throws(CLIError) -> DatabaseLocation {
    try DatabaseLocation.resolve(option: options.db, environment: environment)
  }

  /// Opens the database without writing; a missing file (or PostgreSQL schema) is an
  /// error, and nothing is created.
  func openForReading(_ location: DatabaseLocation) throws -> any AdministeredStore {
    if location.isPostgres {
      return try PostgresSessionStore(
        url: location.path, options: .init(origin: SessionCtl.origin, readOnly: true))
    }
    return try openFileForReading(location)
  }

  /// Opens the database for writing, creating it (and the default directory, or the
  /// PostgreSQL schema) when missing.
  func openForWriting(_ location: DatabaseLocation) throws -> any AdministeredStore {
    if location.isPostgres {
      return try PostgresSessionStore(url: location.path, options: .init(origin: SessionCtl.origin))
    }
    return try openFileForWriting(location)
  }

  /// Opens the SQLite file without writing, for the commands that work on a file. The
  /// default location is refused when others may change its directories.
  func openFileForReading(_ location: DatabaseLocation) throws -> SessionStore {
    try location.requirePrivateDirectory(creating: false)
    return try SessionStore(path: location.path, options: .init(origin: SessionCtl.origin, readOnly: true))
  }

  /// Opens the SQLite file for writing, for the commands that work on a file. The default
  /// location's directories are created (mode 0700), and refused when others may change them.
  func openFileForWriting(_ location: DatabaseLocation) throws -> SessionStore {
    try location.requirePrivateDirectory(creating: true)
    return try SessionStore(
      path: location.path,
      options: .init(origin: SessionCtl.origin, createsMissingDirectories: location.source == .dataHome))
  }

  /// Prints a write's change, or "no change" and why when it changed nothing.
  func printWrite(_ entry: SessionEntry?, _ store: any SessionRepository, reason: () -> String) throws
    -> ExitCode
  {
    if let entry {
      commitment.record("the change is committed all the same, at cursor \(entry.cursor)")
      try output.write(try presenter.change(entry))
    } else {
      try output.write(try presenter.noChange(reason(), store.snapshot()))
    }
    return .success
  }

  /// Writes `sessionctl: error: MESSAGE` on stderr.
  func fail(_ message: String) {
    // Harmless to swallow: when stderr itself is gone there is nobody left to tell; the
    // exit status still says it.
    try? errors.write("sessionctl: error: " + Presenter.display(message))
  }
}
