import CommandLineKit
import Foundation
import ProcessKit
import Synchronization

/// Random argument vectors against `sessionctl`: none may end it by a signal it did not
/// ask for, exit with an undocumented status, or leave an invalid store behind.
struct FuzzScenario: TortureScenario {
  static let sessionctl = Option<String>(
    "sessionctl", placeholder: "path", help: "The sessionctl binary to run.", completesFiles: true,
    isRequired: true)
  static let count = Option<Int>("count", placeholder: "n", help: "How many vectors (default 10000).")
  static let seed = Option<UInt64>("seed", help: "The seed the vectors are drawn from (default: the time).")

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
    // Absolute now: the scenario changes into its scratch directory.
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
    Torture.emit(
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

/// A small, seedable generator (SplitMix64), so a failing seed can be replayed.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
