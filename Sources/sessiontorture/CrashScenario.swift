import CommandLineKit
import Foundation
import ProcessKit
import SessionStorage

/// A writer killed with SIGKILL at random moments loses nothing it acknowledged.
struct CrashScenario: TortureScenario {
  static let trials = Option<Int>("trials", placeholder: "n", help: "How many kills (default 50).")

  static let spec = CommandSpec(
    "crash", abstract: "Kill a writer with SIGKILL at random moments, verify after each.",
    options: [trials, Torture.long])

  let path: String
  let trials: Int
  let deadline: Date?

  init(_ arguments: ParsedArguments) throws {
    path = try arguments.required(Torture.db)
    trials = try arguments[Self.trials] ?? 50
    deadline = try Torture.deadline(arguments)
  }

  func run() throws -> Int32 {
    var generator = SystemRandomNumberGenerator()
    var acknowledged = Set<Int64>()
    var problems: [String] = []
    var trial = 0
    while deadline.map({ Date() < $0 }) ?? (trial < trials) {
      trial += 1
      let writer = try ChildProcess(
        ChildProcess.currentExecutable, ["write", "--db", path, "--count", "0", "--origin", "crash"])
      // Let it start (open, migrate) and then write for a random while, so kills land
      // anywhere: mid-transaction, mid-commit, between writes.
      _ = writer.waitForLine { _ in true }
      usleep(UInt32.random(in: 0..<20_000, using: &generator))
      writer.kill(SIGKILL)
      let status = writer.wait()
      if status != 128 + SIGKILL {
        problems.append("trial \(trial): writer ended with \(status), not by SIGKILL")
      }
      acknowledged.formUnion(writer.lines.compactMap(Int64.init))
      problems += try Verification.problems(path: path, acknowledged: acknowledged).map {
        "trial \(trial): \($0)"
      }
      if !problems.isEmpty { break }
    }
    Torture.emit(
      #"{"scenario":"crash","trials":\#(trial),"acknowledged":\#(acknowledged.count),"problems":\#(problems.count)}"#
    )
    for problem in problems { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
    return problems.isEmpty ? 0 : 1
  }
}
