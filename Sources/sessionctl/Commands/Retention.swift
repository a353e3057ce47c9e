import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl retention`: shows the retention policy stored in the file, or sets it.
  /// Showing needs an existing file; setting creates it like any write.
  struct Retention: SessionCommand {
    static let keep = Option<Int>(
      "keep", placeholder: "n", help: "Keep at most the newest <n> changes (1 or more).")
    static let maxAge = Option<Age>(
      "max-age", placeholder: "age", help: "Delete changes older than <age> (90s, 15m, 12h, 30d).")
    static let off = Flag("off", help: "Remove both limits: keep every change until 'compact'.")

    static let spec = CommandSpec(
      "retention", abstract: "Show or set how long the feed keeps its changes.",
      discussion: """
        Without options, shows the policy stored in the database. --keep and --max-age set
        one limit each and leave the other as it is; --off removes both. Every write, from
        sessionctl, an app or the sqlite3 shell, then deletes in the same transaction the
        changes that are not among the newest <n> or are older than <duration>; setting a
        policy applies it at once. The newest change is always kept.
        """,
      options: [keep, maxAge, off], usageOverride: "[--keep <n>] [--max-age <age>] [--off]")

    /// The limits to set, or nil to show the policy.
    let change: (keep: Int?, maxAge: Age?, off: Bool)?

    init(_ arguments: ParsedArguments) throws {
      let keep = try arguments[Self.keep]
      let maxAge = try arguments[Self.maxAge]
      let off = arguments[Self.off]
      if off && (keep != nil || maxAge != nil) {
        throw arguments.usageError(.invalid("give either '--off' or '--keep'/'--max-age', not both"))
      }
      change = keep == nil && maxAge == nil && !off ? nil : (keep, maxAge, off)
    }

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(
        for: "retention",
        instead: "compact it on a schedule with 'sessionctl compact --keep N' or '--older-than AGE'")
      guard let change else {
        guard location.exists else {
          throw CLIError(.failure, "\(location.path): no database here (it is created by the first write)")
        }
        let store = try context.openFileForReading(location)
        try context.output.write(context.presenter.retention(try store.retention()))
        return .success
      }
      let store = try context.openFileForWriting(location)
      var policy = change.off ? SessionStorage.Retention.off : try store.retention()
      if let keep = change.keep { policy.keepLast = keep }
      if let maxAge = change.maxAge { policy.maxAge = maxAge.duration }
      let compaction = try store.setRetention(policy)
      context.commitment.record(
        "the retention policy is committed all the same (\(compaction.removed) removed, head \(compaction.bounds.head))"
      )
      try context.output.write(
        context.presenter.retention(policy) + [context.presenter.compaction(compaction)])
      return .success
    }
  }
}

extension Presenter {
  /// `retention`: the policy.
  func retention(_ policy: SessionStorage.Retention) -> [String] {
    if json {
      let value: JSONValue = [
        "type": "retention", "keepLast": policy.keepLast.map { .int(Int64($0)) } ?? .null,
        "maxAge": policy.maxAge.map { .string(SessionStorage.Retention.format($0)) } ?? .null,
      ]
      return [value.encoded]
    }
    return table([
      ("keep last", policy.keepLast.map(String.init) ?? "no limit"),
      ("max age", policy.maxAge.map(SessionStorage.Retention.format) ?? "no limit"),
    ])
  }
}
