import CommandLineKit
import Foundation
import SessionStorage
import Synchronization
import SystemKit
import ToolingKit

/// A writer killed with SIGKILL at random moments loses nothing it acknowledged.
struct CrashScenario: TortureScenario {
  static let trials = CommandLineOption<Int>("trials", placeholder: "n", help: "How many kills (default 50).")

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
      let writer = try ChildProcess.thisProgram(["write", "--db", path, "--count", "0", "--origin", "crash"])
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
    ChildChannel.say(
      #"{"scenario":"crash","trials":\#(trial),"acknowledged":\#(acknowledged.count),"problems":\#(problems.count)}"#
    )
    for problem in problems { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
    return problems.isEmpty ? 0 : 1
  }
}

/// Writers in several processes, readers, subscribers and an outside client at once: every
/// change reaches every subscriber exactly once, in commit order, and no writer sees
/// SQLITE_BUSY.
struct ConcurrencyScenario: TortureScenario {
  static let writers = CommandLineOption<Int>(
    "writers", placeholder: "n", help: "Writer processes (default 4).")
  static let writes = CommandLineOption<Int>(
    "writes", placeholder: "n", help: "Writes by each writer (default 250).")
  static let readers = CommandLineOption<Int>(
    "readers", placeholder: "n", help: "Reader processes (default 2).")
  static let subscribers = CommandLineOption<Int>(
    "subscribers", placeholder: "n", help: "Subscriber processes (default 2).")
  static let external = CommandLineOption<Int>(
    "external", placeholder: "n", help: "Writes by the outside Python client (default 100).")

  static let spec = CommandSpec(
    "concurrency", abstract: "Writers, readers, subscribers and a Python client at once.",
    options: [writers, writes, readers, subscribers, external])

  let path: String
  let writers: Int
  let writes: Int
  let readers: Int
  let subscribers: Int
  let external: Int

  init(_ arguments: ParsedArguments) throws {
    path = try arguments.required(Torture.db)
    writers = try arguments[Self.writers] ?? 4
    writes = try arguments[Self.writes] ?? 250
    readers = try arguments[Self.readers] ?? 2
    subscribers = try arguments[Self.subscribers] ?? 2
    external = try arguments[Self.external] ?? 100
  }

  /// An outside client: Python's sqlite3 module, each UPDATE in its own IMMEDIATE
  /// transaction with a busy timeout, as a careful script would do it.
  var pythonWriter: String {
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    for i in range(int(sys.argv[2])):
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE session SET username = ?", ("python-%d" % i,))
        db.execute("COMMIT")
    """
  }

  func run() throws -> Int32 {
    var problems: [String] = []
    let head = try SessionStore(path: path, options: .init(origin: "setup")).bounds().head.value
    // Some changes may be no-ops only if the Python client repeats the current name; it never does.
    let total = writers * writes + external
    let listeners = try (0..<subscribers).map { _ in
      try ChildProcess.thisProgram(["subscribe", "--db", path, "--count", String(total)])
    }
    for listener in listeners where !listener.waitForLine(within: .seconds(30), where: { $0 == "ready" }) {
      problems.append("a subscriber did not start")
    }
    let writerChildren = try (0..<writers).map {
      try ChildProcess.thisProgram([
        "write", "--db", path, "--count", String(writes), "--origin", "writer\($0)",
      ])
    }
    let readerChildren = try (0..<readers).map { _ in
      try ChildProcess.thisProgram(["read", "--db", path, "--count", "2000"])
    }
    let python = try ChildProcess("/usr/bin/env", ["python3", "-c", pythonWriter, path, String(external)])

    let workers =
      [("python", python)] + writerChildren.map { ("writer", $0) } + readerChildren.map { ("reader", $0) }
    for (name, child) in workers {
      let status = child.wait()
      if status != 0 { problems.append("a \(name) exited with \(status) (see its error above)") }
    }
    // Measured while the subscribers still hold the file open: none keeps a read
    // transaction, so checkpoints keep resetting the WAL.
    let wal =
      (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
    if wal > 64 << 20 { problems.append("the WAL grew to \(wal) bytes") }
    let expected = Array(stride(from: head + 1, through: head + Int64(total), by: 1))
    var sequences: [[String]] = []
    for listener in listeners {
      let status = (try? listener.wait(timeout: .seconds(60))) ?? 128 + SIGKILL
      if status != 0 { problems.append("a subscriber exited with \(status)") }
      let received = listener.lines.filter { $0 != "ready" }
      sequences.append(received)
      let cursors = received.compactMap { $0.split(separator: " ").first.flatMap { Int64($0) } }
      if cursors != expected {
        problems.append(
          "a subscriber received \(cursors.count) changes, not exactly cursors \(head + 1)…\(head + Int64(total)) in order"
        )
      }
      let externalCount = received.filter { $0.hasSuffix(" external") }.count
      if externalCount != external {
        problems.append("a subscriber saw \(externalCount) external changes, not \(external)")
      }
    }
    if Set(sequences.map { $0.joined(separator: "\n") }).count > 1 {
      problems.append("subscribers disagree on the order of changes")
    }
    let acknowledged = Set(writerChildren.flatMap { $0.lines.compactMap(Int64.init) })
    if acknowledged.count != writers * writes {
      problems.append("writers acknowledged \(acknowledged.count) changes, not \(writers * writes)")
    }
    problems += try Verification.problems(path: path, acknowledged: acknowledged)
    ChildChannel.say(
      #"{"scenario":"concurrency","changes":\#(total),"subscribers":\#(subscribers),"walBytes":\#(wal),"problems":\#(problems.count)}"#
    )
    for problem in problems { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
    return problems.isEmpty ? 0 : 1
  }
}

/// Random argument vectors against `sessionctl`: none may end it by a signal it did not
/// ask for, exit with an undocumented status, or leave an invalid store behind.
struct FuzzScenario: TortureScenario {
  static let sessionctl = CommandLineOption<String>(
    "sessionctl", placeholder: "path", help: "The sessionctl binary to run.", completesFiles: true,
    isRequired: true)
  static let count = CommandLineOption<Int>(
    "count", placeholder: "n", help: "How many vectors (default 10000).")
  static let seed = CommandLineOption<UInt64>(
    "seed", help: "The seed the vectors are drawn from (default: the time).")

  static let spec = CommandSpec(
    "fuzz-cli", abstract: "Random argument vectors against sessionctl.",
    options: [sessionctl, count, seed, Torture.long])

  let sessionctl: String
  let path: String
  let count: Int
  let seed: UInt64
  let deadline: Date?

  /// Exit statuses sessionctl documents: ok, failure, usage, invalid input, compacted
  /// cursor, and the two signals the driver sends to a `watch` it stops.
  static let documented: Set<Int32> = [0, 1, 64, 65, 66, 130, 143]

  init(_ arguments: ParsedArguments) throws {
    // Absolute paths: the scenario changes into its scratch directory.
    sessionctl = URL(fileURLWithPath: try arguments.required(Self.sessionctl)).standardizedFileURL.path
    path = URL(fileURLWithPath: try arguments.required(Torture.db)).standardizedFileURL.path
    count = try arguments[Self.count] ?? 10_000
    seed = try arguments[Self.seed] ?? UInt64(Date().timeIntervalSince1970)
    deadline = try Torture.deadline(arguments)
  }

  func run() throws -> Int32 {
    let scratch = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(
      "fuzz-scratch"
    ).path
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    // Vectors name relative paths (`--db -1`): they must land in the scratch directory.
    guard FileManager.default.changeCurrentDirectoryPath(scratch) else {
      throw TortureFailure("cannot enter \(scratch)")
    }
    let environment = [
      "SESSIONCTL_DB": path, "HOME": scratch, "XDG_DATA_HOME": "\(scratch)/data", "PATH": "/usr/bin:/bin",
      "LANG": "C.UTF-8",
    ]
    let problems = Mutex<[String]>([])
    let ran = Mutex(0)
    // Two lanes, one per core; each has its own generator derived from the seed.
    DispatchQueue.concurrentPerform(iterations: 2) { lane in
      var random = SplitMix64(seed: seed &+ UInt64(lane))
      var vectors = VectorGenerator(scratch: scratch)
      while deadline.map({ Date() < $0 }) ?? (ran.withLock { $0 } < count) {
        let index = ran.withLock { count in
          count += 1
          return count
        }
        let argv = vectors.next(using: &random)
        let shown = {
          argv.map { String(decoding: $0, as: UTF8.self).debugDescription }.joined(separator: " ")
        }
        do {
          let status = try exitStatus(argv, environment: environment)
          if !Self.documented.contains(status) {
            problems.withLock { $0.append("vector \(index) [\(shown())] exited with \(status)") }
          }
        } catch {
          problems.withLock { $0.append("vector \(index) [\(shown())]: \(error)") }
        }
        if index.isMultiple(of: 1000), let found = try? Verification.problems(path: path, acknowledged: []) {
          problems.withLock { $0 += found.map { "after vector \(index): \($0)" } }
        }
      }
    }
    var found = problems.withLock { $0 }
    found += try Verification.problems(path: path, acknowledged: [])
    ChildChannel.say(
      #"{"scenario":"fuzz-cli","vectors":\#(ran.withLock { $0 }),"seed":\#(seed),"problems":\#(found.count)}"#
    )
    for problem in found.prefix(50) { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
    return found.isEmpty ? 0 : 1
  }

  /// Runs sessionctl with `argv`, output discarded; SIGTERM after 0.3 s (a `watch` without
  /// a limit runs until told), SIGKILL a second later. The exit status, or 128 + the signal
  /// that ended it; a SIGKILL of ours counts as the graceful stop it replaced (143).
  private func exitStatus(_ argv: [[UInt8]], environment: [String: String]) throws -> Int32 {
    let child = try ChildProcess(
      sessionctl, rawArguments: argv, environment: environment, stdout: .null, stderr: .null)
    if let status = child.status(within: .milliseconds(300)) { return status }
    child.kill(SIGTERM)
    if let status = child.status(within: .seconds(1)) { return status }
    child.kill(SIGKILL)
    let status = child.wait()
    return child.termination == .signalled(SIGKILL) ? 143 : status
  }
}

/// Argument vectors built from sessionctl's words, broken values and hostile strings, as bytes
/// (argv can hold invalid UTF-8).
struct VectorGenerator {
  let scratch: String

  static let words = [
    "status", "login", "logout", "rename", "watch", "history", "compact", "migrate", "check", "help",
    "completion",
    "bash", "--json", "-j", "--since", "--limit", "--keep", "--before", "--", "-h", "--help", "--version",
    "--db",
    "-x", "--unknown", "statsu", "--jsno", "-jh", "--limit=3", "--since=0", "--keep=-1", "help login",
  ]

  static let values: [[UInt8]] =
    [
      "", " ", "   ", "alice", " alice", "alice ", "a\nb", "a\0b", "\u{1B}[31mred\u{1B}[0m",
      "Robert'); DROP TABLE session;--",
      "مرحبا", "שלום", "🧑‍💻", "Jose\u{301}", "0", "1", "-1", "3", "99999999999999999999", "9223372036854775807",
      "1.5", "abc", "--", "-", "\u{202E}evil", String(repeating: "x", count: 256),
      String(repeating: "y", count: 257),
      String(repeating: "z", count: 100_000),
    ].map { Array($0.utf8) } + [[0xFF, 0xFE, 0x41], [0x61, 0xC3], [0xED, 0xA0, 0x80]]

  mutating func next(using random: inout SplitMix64) -> [[UInt8]] {
    let length = Int(random.next() % 5)
    var argv: [[UInt8]] = []
    for _ in 0...length {
      switch random.next() % 10 {
      case 0..<5: argv.append(Array(Self.words[Int(random.next() % UInt64(Self.words.count))].utf8))
      case 5..<9: argv.append(Self.values[Int(random.next() % UInt64(Self.values.count))])
      default: argv.append(Array("--db=\(scratch)/other\(random.next() % 3).db".utf8))
      }
    }
    // Keep most vectors about one real command, so they reach the store instead of stopping at usage.
    if random.next() % 3 != 0 {
      let commands = ["login", "rename", "history", "compact", "watch", "status", "logout", "check"]
      argv.insert(Array(commands[Int(random.next() % UInt64(commands.count))].utf8), at: 0)
    }
    return argv
  }
}
