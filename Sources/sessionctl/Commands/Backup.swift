import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl backup <file> [--force]`: a verified copy of the store, taken while others
  /// keep writing and watching.
  struct Backup: SessionCommand {
    static let file = Argument<String>("file", help: "The backup file to create.")
    static let force = Flag("force", help: "Replace <file> if it exists.")

    static let spec = CommandSpec(
      "backup", abstract: "Write a verified copy of the store to <file>.",
      discussion: """
        Copies the store as of one commit with SQLite's online backup API, while other
        processes keep writing and watching. The copy is written to a new private file
        (mode 0600) beside <file>, opened as a store of its own and checked like 'check'
        does, and only then put in place: on any failure nothing is left at <file>. An
        existing <file> is kept unless --force is given. Reads the store without writing.

        Refused with exit 65, also with --force: a <file> that is the store itself or its
        -wal, -shm or -journal file, by any name (a symbolic link to them or to their
        directory, a hard link), and a <file> that exists and is not a regular file (a
        device, a FIFO, a directory).
        """,
      arguments: [file], options: [force])

    /// Where to write, as typed.
    let file: String
    /// Whether an existing file is replaced.
    let force: Bool

    init(_ arguments: ParsedArguments) throws {
      file = try arguments.required(Self.file)
      force = arguments[Self.force]
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(for: "backup", instead: "back up its schema with pg_dump --schema=NAME")
      guard location.exists else {
        throw CLIError(.failure, "\(location.path): no database here (nothing to back up)")
      }
      let store = try context.openFileForReading(location)
      let result = try store.backup(to: file, overwrite: force)
      context.commitment.record(
        "the backup is written all the same (\(Presenter.display(result.path)), head \(result.head))")
      try context.output.write(context.presenter.backup(result))
      return .success
    }
  }
}

extension Presenter {
  /// `backup`.
  func backup(_ result: SessionStore.BackupResult) -> String {
    if json {
      let value: JSONValue = [
        "type": "backup", "path": .string(result.path), "head": .int(result.head.value),
        "entries": .int(Int64(result.entries)), "bytes": .int(result.bytes),
      ]
      return value.encoded
    }
    return "backed up to \(Self.display(result.path)): head \(result.head), "
      + "\(result.entries) \(result.entries == 1 ? "change" : "changes"), \(result.bytes) bytes, check passed"
  }
}
