import CSQLite
import FeedKit
import Foundation
import SessionStorage
import SystemKit

/// `sessionbench --instructions`: instructions per operation, ours and raw, counted by
/// valgrind's callgrind. Unlike times they do not move with the machine's load, so they
/// compare two builds (or two commits) on a busy shared machine; times say what a user
/// waits. Each side runs in a child process twice, with N and 2N operations after the same
/// setup: the difference divided by N is the cost of one operation, setup excluded.
enum InstructionCount {
  /// The scenarios that have an instruction count: one write (with 1 and with 100 accounts
  /// in the roster), one read, one history page of 100 entries (the newest of a log of
  /// 1,000 changes), one `open` (as the `open` scenario's).
  static let scenarios = ["write-normal", "write-normal-100", "read", "history", "open"]
  static let operations = 2_000

  static func run(_ scenarios: [String]) throws -> Outcome {
    guard FileManager.default.isExecutableFile(atPath: valgrind) else {
      throw BenchError("--instructions needs valgrind (apt-get install -y valgrind)")
    }
    var measurements: [Measurement] = []
    var verdicts: [Verdict] = []
    for scenario in scenarios {
      let ours = try perOperation(scenario, side: "ours")
      let raw = try perOperation(scenario, side: "raw")
      measurements.append(
        Measurement(scenario: scenario, metric: .instructionsPerOperation, ours: ours, baseline: raw))
      // The aims: 1.15× for a write and a read, 1.5× for a page, 3× for an open.
      let aim = ["history": 1.5, "open": 3.0][scenario] ?? 1.15
      verdicts.append(
        Verdict(
          scenario: scenario, aim: String(format: "instructions per operation ≤ %.2f× raw", aim),
          measured: String(format: "%.2f×", ours / raw), met: ours <= raw * aim))
    }
    return Outcome(measurements: measurements, verdicts: verdicts)
  }

  static let valgrind = "/usr/bin/valgrind"

  /// (instructions with 2N operations − with N) ÷ N.
  private static func perOperation(_ scenario: String, side: String) throws -> Double {
    let once = try instructions(scenario, side: side, count: operations)
    let twice = try instructions(scenario, side: side, count: 2 * operations)
    return Double(twice - once) / Double(operations)
  }

  /// Runs `sessionbench instruction-loop` under callgrind and reads its total.
  private static func instructions(_ scenario: String, side: String, count: Int) throws -> Int64 {
    let workspace = try Workspace("instructions")
    let report = workspace.root + "/callgrind.txt"
    let child = try ChildProcess(
      valgrind,
      [
        "--tool=callgrind", "--callgrind-out-file=/dev/null", ChildProcess.currentExecutable,
        "instruction-loop", "--scenario", scenario, "--side", side, "--count", String(count), "--db",
        side == "ours" ? workspace.ours : workspace.raw,
      ], stdout: .null, stderr: .file(report))
    let status = try child.wait(timeout: .seconds(600))
    let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
    guard status == 0, let line = text.split(separator: "\n").first(where: { $0.contains("Collected :") }),
      let total = line.split(separator: ":").last.flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) })
    else { throw BenchError("callgrind failed (status \(status)): \(text.suffix(500))") }
    return total
  }

  /// The child: the scenario's setup, then `count` operations of one side.
  static func loop(scenario: String, side: String, count: Int, path: String) throws {
    let ours = side == "ours"
    if scenario == "open" {
      // Nothing of this process may hold the file open: a store opened beside another
      // instance on the same file shares its connections.
      let options = SessionStore.FileOptions(origin: "sessionbench")
      try SessionStore(path: path, options: options).blocking.logIn(as: "alice")
      for _ in 0..<count {
        if ours {
          _ = try SessionStore(path: path, options: options).state
        } else {
          try OpenScenario.rawOpenAndRead(path)
        }
      }
      return
    }
    let store = try SessionStore(path: path, options: .init(durability: .normal, origin: "sessionbench"))
    let db = try RawDB(path: path, synchronous: "NORMAL")
    let page = 100
    if scenario == "history" {
      try HistoryScenario.fill(
        RawWriter(db: db, origin: "sessionbench"), count: HistoryScenario.smallLog, from: 0)
    }
    if scenario == "write-normal-100" {
      // The 99 other accounts, as ``Roster`` makes them (both sides share the file here).
      for number in 2...100 { try store.blocking.logIn(as: Roster.name(number)) }
    }
    let newest = Cursor(try db.head() - Int64(page))
    if ours {
      for index in 0..<count {
        switch scenario {
        case "read": _ = try store.state
        case "history": _ = try store.history(from: .after(newest), limit: page)
        default:
          _ = index.isMultiple(of: 2) ? try store.blocking.logIn(as: "alice") : try store.blocking.logOut()
        }
      }
      return
    }
    let writer = try RawWriter(db: db)
    let select = try db.prepare("SELECT username, is_logged_in, updated_at FROM session WHERE id = 1")
    let changes = try db.prepareChanges(limit: page)
    for index in 0..<count {
      switch scenario {
      case "read":
        guard sqlite3_step(select) == SQLITE_ROW else { throw BenchError("the session row is missing") }
        _ = sqlite3_column_text(select, 0)
        _ = sqlite3_column_int64(select, 1)
        _ = sqlite3_column_text(select, 2)
        sqlite3_reset(select)
      case "history": RawDB.readChanges(changes, after: newest.value)
      default: _ = try writer.write(login: index.isMultiple(of: 2))
      }
    }
  }
}
