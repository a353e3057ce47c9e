import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl check`: every verification, then exit 1 if any failed.
  struct Check: SessionCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "check", abstract: "Verify the file and report every finding.",
      discussion: """
        Runs PRAGMA integrity_check, compares the migration records with this build's,
        checks that the tables, indexes and triggers are exactly the ones the migrations
        create, that the session row is the state the newest change left (also after
        compaction), that every stored time is ISO-8601 UTC with milliseconds, that the
        cursors above the compaction point have no hole and lie between 1 and the largest
        integer, and that the stored username meets the rules. Reads without writing;
        exits 1 when anything fails.
        """)

    func run(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let store = try context.openForReading(location)
      let items = try store.check()
      try context.output.write(context.presenter.check(items))
      let failures = items.filter { $0.verdict == .failed }.count
      guard failures == 0 else {
        context.fail(
          "check found \(failures) \(failures == 1 ? "problem" : "problems") in \(location.display)")
        return .failure
      }
      return .success
    }
  }
}

extension Presenter {
  /// `check`: one line per verification.
  func check(_ results: [CheckResult]) -> [String] {
    if json {
      return results.map {
        ([
          "type": "check", "name": .string($0.check.rawValue), "passed": .bool($0.verdict == .passed),
          "detail": .string($0.detail),
        ]
          as JSONValue).encoded
      }
    }
    let width = results.map(\.check.rawValue.count).max() ?? 0
    return results.map {
      "\($0.verdict == .passed ? "ok  " : "FAIL")  \(Self.padded($0.check.rawValue, width))  "
        + Self.display($0.detail)
    }
  }
}
