import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl compact`: what was removed and what is kept. A missing file is an error,
  /// not created.
  struct Compact: SessionCommand {
    /// What `compact` deletes.
    enum Retention: Sendable, Equatable {
      /// All but the newest N changes.
      case keep(Int)
      /// Every change before a cursor.
      case before(Cursor)
      /// Every change older than a duration.
      case olderThan(Age)
    }

    static let keep = Option<Int>("keep", placeholder: "n", help: "Keep the newest <n> changes.")
    static let before = Option<Cursor>(
      "before", placeholder: "cursor", help: "Delete the changes before <cursor>.")
    static let olderThan = Option<Age>(
      "older-than", placeholder: "age",
      help: "Delete the oldest changes up to the first one younger than <age> (90s, 15m, 12h, 30d).")

    static let spec = CommandSpec(
      "compact", abstract: "Delete old changes from the feed.",
      discussion: """
        Give exactly one of --keep, --before and --older-than. Cursors are never reused: after compaction
        the head cursor stays where it was, and a reader resuming from a deleted cursor
        gets exit status 66 with the oldest cursor still kept.
        """,
      options: [keep, before, olderThan],
      usageOverride: "(--keep <n> | --before <cursor> | --older-than <age>)")

    /// What to delete.
    let retention: Retention

    init(_ arguments: ParsedArguments) throws {
      // Which one was given matters before what was given.
      let given = [
        arguments.contains(Self.keep), arguments.contains(Self.before), arguments.contains(Self.olderThan),
      ]
      .filter { $0 }
      guard given.count == 1 else {
        throw arguments.usageError(
          .invalid(
            given.isEmpty
              ? "'compact' needs '--keep <n>', '--before <cursor>' or '--older-than <age>'"
              : "give one of '--keep <n>', '--before <cursor>' and '--older-than <age>', not several"))
      }
      if arguments.contains(Self.keep) {
        retention = .keep(try arguments.required(Self.keep))
      } else if arguments.contains(Self.before) {
        retention = .before(try arguments.required(Self.before))
      } else {
        retention = .olderThan(try arguments.required(Self.olderThan))
      }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      guard location.exists else {
        throw CLIError(.failure, "\(location.display): no database here (nothing to compact)")
      }
      let store = try context.openForWriting(location)
      let compaction =
        switch retention {
        case .keep(let count): try store.compact(keepingLast: count)
        case .before(let cursor): try store.compact(before: cursor)
        case .olderThan(let age): try store.compact(olderThan: age.duration)
        }
      context.commitment.record(
        "the compaction is committed all the same (\(compaction.removed) removed, head \(compaction.bounds.head))"
      )
      try context.output.write(context.presenter.compaction(compaction))
      return .success
    }
  }
}

extension Presenter {
  /// `compact`.
  func compaction(_ compaction: CompactionResult) -> String {
    let bounds = compaction.bounds
    if json {
      let value: JSONValue = [
        "type": "compaction", "removed": .int(Int64(compaction.removed)),
        "oldest": bounds.oldest.map { .int($0.value) } ?? .null, "head": .int(bounds.head.value),
      ]
      return value.encoded
    }
    let removed = "removed \(compaction.removed) \(compaction.removed == 1 ? "entry" : "entries")"
    guard let oldest = bounds.oldest else { return removed + "; none kept (head \(bounds.head))" }
    return removed + "; kept \(oldest)…\(bounds.head)"
  }
}
