import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl restore <file>`: the store's content replaced by a verified backup's, while
  /// other processes keep it open.
  struct Restore: SessionCommand {
    static let file = Argument<String>("file", help: "The backup to restore (from 'sessionctl backup').")

    static let spec = CommandSpec(
      "restore", abstract: "Replace the store's content with the backup in <file>.",
      discussion: """
        Verifies <file> first: it must be a session store of this version's schema that
        passes 'check'; otherwise nothing is changed. Then copies it into the store with
        SQLite's backup API in one transaction: processes that have the store open go on,
        and see the backup's content from that commit on. A running 'watch' whose last
        change the restore removed or replaced exits 67 (take a new snapshot). Creates
        the store when it is missing. A <file> that is the store itself or its -wal, -shm
        or -journal file, by any name, is refused with exit 65.
        """,
      arguments: [file])

    /// The backup, as typed.
    let file: String

    init(_ arguments: ParsedArguments) throws {
      file = try arguments.required(Self.file)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(
        for: "restore", instead: "restore a pg_dump of its schema with pg_restore or psql")
      let store = try context.openFileForWriting(location)
      let result = try store.restore(from: file)
      context.commitment.record(
        "the restore is committed all the same (head \(result.head), was \(result.previousHead))")
      try context.output.write(context.presenter.restore(result))
      return .success
    }
  }
}

extension Presenter {
  /// `restore`.
  func restore(_ result: SessionStore.RestoreResult) -> String {
    if json {
      let value: JSONValue = [
        "type": "restore", "path": .string(result.path), "source": .string(result.source),
        "head": .int(result.head.value), "previousHead": .int(result.previousHead.value),
        "entries": .int(Int64(result.entries)),
      ]
      return value.encoded
    }
    return "restored \(Self.display(result.path)) from \(Self.display(result.source)): head \(result.head) "
      + "(was \(result.previousHead)), \(result.entries) \(result.entries == 1 ? "change" : "changes")"
  }
}
