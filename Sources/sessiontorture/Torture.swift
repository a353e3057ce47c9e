import CommandLineKit
import FeedKit
import Foundation
import SessionStorage

/// The driver's command line: the scenarios (a type each) and the children they spawn,
/// listed once in ``commands``.
enum Torture {
  /// Every command, in the order help lists them.
  static let commands =
    [
      TortureCommand.scenario(CrashScenario.self), .scenario(ConcurrencyScenario.self),
      .scenario(ChaosScenario.self), .scenario(FuzzScenario.self), .scenario(LinearizeScenario.self),
    ] + children

  /// `--db <path>`, which every command needs.
  static let db = CommandLineOption<String>(
    "db", placeholder: "path",
    help: "The database file (for chaos, write, apply and subscribe also a postgresql:// URL).",
    isInherited: true, completesFiles: true, isRequired: true)
  /// `--long <seconds>`, for the scenarios that can run for as long as one likes.
  static let long = CommandLineOption<Double>(
    "long", placeholder: "seconds", help: "Run until this much time has passed instead of a fixed count.")

  static let root = CommandSpec(
    "sessiontorture", abstract: "Runs the reliability scenarios against a SessionStorage database.",
    discussion: """
      Each scenario prints one JSON summary line and exits 0 when every check held, 1
      otherwise, 64 on bad usage. write, read and subscribe are the children the scenarios
      spawn.
      """,
    options: [db], subcommands: commands.map(\.spec))

  static func run(_ arguments: [String]) -> Int32 {
    let formatter = HelpFormatter(root: root)
    do {
      let parsed = try CommandLineParser(root: root).parse(arguments)
      if parsed.helpRequested {
        print(formatter.help(for: parsed.commandPath), terminator: "")
        return 0
      }
      guard let name = parsed.commandPath.first, let command = commands.first(where: { $0.spec.name == name })
      else { throw parsed.usageError(.missingCommand) }
      return try command.run(parsed)
    } catch {
      let usage = formatter.diagnosis(of: error)
      let lines = usage ?? ["sessiontorture: error: \(error)"]
      FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
      return usage == nil ? 1 : 64
    }
  }

  /// When `--long` ends, if it was given.
  static func deadline(_ arguments: ParsedArguments) throws(InvalidValue) -> Date? {
    try arguments[long].map { Date().addingTimeInterval($0) }
  }
}

/// A check or a step of a scenario that could not be carried out (exit 1); what the checks
/// find is counted as problems instead.
struct TortureFailure: Error, CustomStringConvertible {
  let description: String

  init(_ description: String) { self.description = description }
}

/// What must hold after any run: checked through a fresh store, independent of the writers.
enum Verification {
  /// Problems found: SQLite integrity, migration records, state vs. newest change, cursor
  /// holes, and every acknowledged cursor present in the feed.
  static func problems(path: String, acknowledged: Set<Int64>) throws -> [String] {
    try problems(of: SessionStore(path: path, options: .init(origin: "verifier")), acknowledged: acknowledged)
  }

  /// The same checks through `store`, a new instance on either backend.
  static func problems(of store: SessionStore, acknowledged: Set<Int64>) throws -> [String] {
    var problems = try store.check().filter { $0.verdict == .failed }.map { "\($0.check): \($0.detail)" }
    var kept = Set<Int64>()
    var start = FeedStart.beginning
    while true {
      let page = try store.history(from: start, limit: 1000)
      guard let last = page.last else { break }
      kept.formUnion(page.map(\.cursor.value))
      start = .after(last.cursor)
    }
    let lost = acknowledged.subtracting(kept)
    if !lost.isEmpty { problems.append("acknowledged but missing: \(lost.sorted().prefix(10))") }
    return problems
  }
}
