import Foundation
import SessionStorage

/// The driver's commands and their options.
enum Torture {
  static let usage = """
    USAGE: sessiontorture <scenario> --db PATH [options]

    SCENARIOS:
      crash --trials N [--long SECONDS]     kill a writer with SIGKILL at random moments, verify after each
      concurrency [--writers 4] [--writes 250] [--readers 2] [--subscribers 2] [--external 100]
                                            writers, readers, subscribers and a Python client at once
      chaos [--seed S] [--steps 300] [--long SECONDS] [--sessionctl PATH] [--shrink-seconds 60]
                                            random steps (instances, processes, shell, kills, compaction,
                                            subscribers) checked against a model after every step
      fuzz-cli --sessionctl PATH [--count 10000] [--seed N] [--long SECONDS]
                                            random argument vectors against sessionctl
    CHILDREN (spawned by the scenarios):
      write --count N [--origin NAME] [--instances K]
                                            alternate login/logout through K instances; print each
                                            acknowledged cursor (0 = forever)
      read --count N                        read the state N times
      subscribe --count N                   print "cursor origin" for each of the next N changes (0 = forever)

    Prints one JSON summary line; exits 0 when every check held, 1 otherwise, 64 on bad usage.
    """

  static func run(_ arguments: [String]) -> Int32 {
    guard let scenario = arguments.first, let options = Options(arguments.dropFirst()) else {
      FileHandle.standardError.write(Data(usage.utf8))
      return 64
    }
    do {
      switch scenario {
      case "write": return try Children.write(options)
      case "read": return try Children.read(options)
      case "subscribe": return try Children.subscribe(options)
      case "crash": return try CrashScenario(options).run()
      case "concurrency": return try ConcurrencyScenario(options).run()
      case "chaos": return try ChaosScenario(options).run()
      case "fuzz-cli": return try FuzzScenario(options).run()
      default:
        FileHandle.standardError.write(Data("sessiontorture: unknown scenario '\(scenario)'\n\(usage)".utf8))
        return 64
      }
    } catch {
      FileHandle.standardError.write(Data("sessiontorture: error: \(error)\n".utf8))
      return 1
    }
  }

  /// Writes one line to standard output at once (children report through pipes).
  static func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = Foundation.write(1, $0.baseAddress, $0.count) }
  }
}

/// `--name value` pairs.
struct Options {
  private var values: [String: String] = [:]

  init?(_ arguments: ArraySlice<String>) {
    var rest = arguments[...]
    while let name = rest.popFirst() {
      guard name.hasPrefix("--"), let value = rest.popFirst() else { return nil }
      values[String(name.dropFirst(2))] = value
    }
  }

  func string(_ name: String, _ fallback: String? = nil) throws -> String {
    guard let value = values[name] ?? fallback else { throw UsageError(message: "--\(name) is required") }
    return value
  }

  func int(_ name: String, _ fallback: Int) throws -> Int {
    guard let text = values[name] else { return fallback }
    guard let value = Int(text), value >= 0 else {
      throw UsageError(message: "--\(name) takes a whole number")
    }
    return value
  }

  /// `--long SECONDS`: run until that much time has passed instead of a fixed count.
  var deadline: Date? { values["long"].flatMap(Double.init).map { Date().addingTimeInterval($0) } }
}

struct UsageError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}
