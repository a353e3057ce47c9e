import SessionStorage

/// What the command line asked for. Parsing is deliberately small: a few flags, options
/// with a value (`--db PATH` or `--db=PATH`), and positional scenario names.
enum Command: Equatable {
  case help
  case list
  case bench(quick: Bool, json: String?, scenarios: [String])
  case childSubscriber(path: String)
  case childRawWatcher(path: String)

  static let usage = "usage: sessionbench [--quick] [--json FILE] [SCENARIO…]"

  static let helpText = """
    OVERVIEW: Benchmarks SessionStorage against raw SQLite calls, side by side in one run.

    \(usage)

    ARGUMENTS:
      SCENARIO        \(Scenarios.names.joined(separator: ", "))
                      (default: all of them, in this order)

    OPTIONS:
      --quick         shrink every scenario to seconds (a smoke test; figures not meant to be quoted,
                      and the aims are not judged on them)
      --json FILE     also write the figures as a JSON array of
                      {"scenario", "metric", "ours", "baseline"} objects
      --list          print the scenario names
      -h, --help      show this help

    See BENCHMARKS.md for what each scenario measures.
    """

  /// Parses the arguments after the program name.
  static func parse(_ arguments: [String]) throws(UsageError) -> Command {
    var parser = Parser(arguments)
    switch arguments.first {
    case "child-subscriber":
      parser.skip()
      parser.usage = "usage: sessionbench child-subscriber --db PATH"
      let path = try parser.required("--db")
      try parser.finish()
      return .childSubscriber(path: path)
    case "child-raw-watcher":
      parser.skip()
      parser.usage = "usage: sessionbench child-raw-watcher --db PATH"
      let path = try parser.required("--db")
      try parser.finish()
      return .childRawWatcher(path: path)
    default:
      if parser.flag("-h") || parser.flag("--help") { return .help }
      if parser.flag("--list") { return .list }
      let quick = parser.flag("--quick")
      let json = try parser.value("--json")
      let scenarios = parser.remaining
      if let option = scenarios.first(where: { $0.hasPrefix("-") }) {
        throw UsageError("unknown option '\(option)'")
      }
      if let unknown = scenarios.first(where: { !Scenarios.names.contains($0) }) {
        throw UsageError(
          "unknown scenario '\(unknown)' (scenarios: \(Scenarios.names.joined(separator: ", ")))")
      }
      return .bench(quick: quick, json: json, scenarios: scenarios.isEmpty ? Scenarios.names : scenarios)
    }
  }
}

/// A command line that does not parse; exits with status 64.
struct UsageError: Error, CustomStringConvertible {
  let description: String
  /// The usage line of the command that was meant.
  let usage: String

  init(_ description: String, usage: String = Command.usage) {
    self.description = description
    self.usage = usage
  }
}

/// Takes flags and options out of an argument list; what is left is positional.
private struct Parser {
  private(set) var remaining: [String]
  /// The usage line errors carry.
  var usage = Command.usage

  init(_ arguments: [String]) { remaining = arguments }

  mutating func skip() { remaining.removeFirst() }

  /// Removes `name` wherever it is; true when it was there.
  mutating func flag(_ name: String) -> Bool {
    guard let index = remaining.firstIndex(of: name) else { return false }
    remaining.remove(at: index)
    return true
  }

  /// Removes `name VALUE` or `name=VALUE` and returns the value.
  mutating func value(_ name: String) throws(UsageError) -> String? {
    if let index = remaining.firstIndex(where: { $0.hasPrefix(name + "=") }) {
      let value = String(remaining.remove(at: index).dropFirst(name.count + 1))
      guard !value.isEmpty else { throw UsageError("\(name) needs a value", usage: usage) }
      return value
    }
    guard let index = remaining.firstIndex(of: name) else { return nil }
    guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value", usage: usage) }
    let value = remaining[index + 1]
    remaining.removeSubrange(index...index + 1)
    return value
  }

  mutating func required(_ name: String) throws(UsageError) -> String {
    guard let value = try value(name) else { throw UsageError("missing \(name)", usage: usage) }
    return value
  }

  /// Fails on anything left over.
  func finish() throws(UsageError) {
    if let extra = remaining.first { throw UsageError("unexpected argument '\(extra)'", usage: usage) }
  }
}
