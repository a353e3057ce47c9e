import CommandLineKit
import Foundation
import Synchronization
import SystemKit
import ToolingKit

/// `linearize`: concurrent clients, each a loop of whole `sessionctl --json` processes
/// (login, logout of the active account, of a named one or of all, rename of the active
/// account or of a named one, switch, remove, status, history; some killed mid-call), and
/// watchers (`watch --json`, killed and resumed with `--since`), on one store: a SQLite file
/// or a PostgreSQL URL. Every response is recorded with its call and return time and the
/// history is checked by ``Linearizability`` against the sequential model; the watchers by
/// ``LinearizeWatcher`` against the log read at the end. On a failure it prints the seed,
/// the problems and a compact history around the point where no order explains it.
struct LinearizeScenario: TortureScenario {
  static let seed = CommandLineOption<UInt64>(
    "seed", help: "The seed the operations are drawn from (default: a random one); with --long, the first.")
  static let sessionctl = CommandLineOption<String>(
    "sessionctl", placeholder: "path", help: "The sessionctl binary.", completesFiles: true, isRequired: true)
  static let clients = CommandLineOption<Int>(
    "clients", placeholder: "n", help: "Concurrent clients (default 8).")
  static let operations = CommandLineOption<Int>(
    "operations", placeholder: "n", help: "Operations per client and round (default 25).")
  static let watchers = CommandLineOption<Int>(
    "watchers", placeholder: "n", help: "Watcher processes (default 2).")
  static let killPercent = CommandLineOption<Int>(
    "kill-percent", placeholder: "p",
    help: "The share of operations killed with SIGKILL mid-call (default 10).")
  static let hangSeconds = CommandLineOption<Int>(
    "hang-seconds", placeholder: "seconds",
    help: "How long a round may run before it fails as hung (default 120).")

  static let spec = CommandSpec(
    "linearize",
    abstract: "Concurrent sessionctl clients (some killed) and resumed watchers, checked for "
      + "linearizability against a sequential model and for the watch guarantees.",
    discussion: """
      --db is a file or a postgresql:// URL. Each round starts with one login, then runs
      the clients and watchers at once on the store. The clients call login, logout
      (the active account, a named one, --all), rename (the active account, --account),
      switch, remove, status and history, with a few usernames so that most calls find
      their account, some killed mid-call. The round passes when one order of the
      operations that respects their call and return times explains every response and
      the log read at the end (a killed write made the entries no answer claims, or
      nothing), and every watcher delivered every change of the log after its snapshot
      exactly once, in order, identical to the log and to the write's own response.
      """,
    options: [seed, sessionctl, clients, operations, watchers, killPercent, Torture.long, hangSeconds])

  let database: String
  let seed: UInt64
  let sessionctl: String
  let clients: Int
  let operations: Int
  let watchers: Int
  let killPercent: Int
  let deadline: Date?
  let hangLimit: Duration

  init(_ arguments: ParsedArguments) throws {
    database = try arguments.required(Torture.db)
    seed = try arguments[Self.seed] ?? UInt64(UInt32.random(in: 0...UInt32.max))
    sessionctl = try arguments.required(Self.sessionctl)
    clients = try Self.value(arguments, Self.clients, in: 1...64, default: 8)
    operations = try Self.value(arguments, Self.operations, in: 1...10_000, default: 25)
    watchers = try Self.value(arguments, Self.watchers, in: 0...16, default: 2)
    killPercent = try Self.value(arguments, Self.killPercent, in: 0...100, default: 10)
    deadline = try Torture.deadline(arguments)
    hangLimit = .seconds(try arguments[Self.hangSeconds] ?? 120)
  }

  /// The value of `option`, or `fallback`; refused unless within `range`.
  static func value(
    _ arguments: ParsedArguments, _ option: CommandLineOption<Int>, in range: ClosedRange<Int>,
    default fallback: Int
  ) throws -> Int {
    let value = try arguments[option] ?? fallback
    guard range.contains(value) else {
      throw InvalidValue(
        expected: "a whole number from \(range.lowerBound) to \(range.upperBound)", text: String(value),
        name: "--\(option.name)")
    }
    return value
  }

  /// What the rounds counted.
  struct Counts {
    var operations = 0
    var killed = 0
    var noChange = 0
    /// Writes refused (a name no account has or another account holds), each explained by
    /// the model.
    var refused = 0
    var delivered = 0
    var watchRestarts = 0
  }

  func run() throws -> Int32 {
    var seed = self.seed
    var rounds = 0
    var counts = Counts()
    var failure: (seed: UInt64, problems: [String])?
    repeat {
      ChaosWatchdog.shared.arm(
        hangLimit,
        report: ["seed \(seed) hung: the round ran past \(hangLimit)", "replay: \(replay(seed))"],
        summary: #"{"scenario":"linearize","seed":\#(self.seed),"hung":true,"problems":1}"#)
      let problems = try LinearizeRound(scenario: self, seed: seed).run(&counts)
      ChaosWatchdog.shared.disarm()
      rounds += 1
      if !problems.isEmpty {
        failure = (seed, problems)
        break
      }
      seed &+= 1
    } while deadline.map { Date() < $0 } ?? false
    ChildChannel.say(
      #"{"scenario":"linearize","seed":\#(self.seed),"rounds":\#(rounds),"operations":\#(counts.operations),"killed":\#(counts.killed),"noChange":\#(counts.noChange),"refused":\#(counts.refused),"delivered":\#(counts.delivered),"watchRestarts":\#(counts.watchRestarts),"problems":\#(failure?.problems.count ?? 0)}"#
    )
    guard let failure else { return 0 }
    report("seed \(failure.seed) failed:")
    for problem in failure.problems { report("problem: \(problem)") }
    report("replay: \(replay(failure.seed))")
    return 1
  }

  /// The command that runs the round of `seed` again (timing decides; it may pass).
  func replay(_ seed: UInt64) -> String {
    "sessiontorture linearize --seed \(seed) --clients \(clients) --operations \(operations) "
      + "--watchers \(watchers) --kill-percent \(killPercent) --sessionctl \(sessionctl) --db <fresh store>"
  }

  private func report(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}

/// One round: the opening login, the clients and watchers at once, then the checks.
struct LinearizeRound {
  let scenario: LinearizeScenario
  let seed: UInt64

  /// The names clients use: few, so that writes that name an account find it often, and
  /// many change nothing.
  static let names = ["ann", "bob", "cat"]

  /// Runs the round; the problems found (none: it passed).
  func run(_ counts: inout Counts) throws -> [String] {
    let scratch = try TemporaryDirectory()
    var client = LinearizeClient(
      sessionctl: scenario.sessionctl, database: scenario.database, scratch: scratch.path)
    // The opening write, alone: the state every client and watcher starts from.
    let opening = try client.perform(.login(Self.names[0]), number: -1, killAfter: nil)
    let initial: Linearizability.State
    switch opening.operation.response {
    case .change, .noChange:
      // The roster every round before this one left, read from the whole log.
      initial = try Self.roster(client.log())
    default: return ["the opening login failed: \(opening.problem ?? "\(opening.operation.response)")"]
    }
    client.initial = initial
    let watchers = (0..<scenario.watchers).map { index in
      LinearizeWatcher(
        index: index, client: client, seed: seed &+ UInt64(1000 + index), startAfter: initial.head)
    }
    for watcher in watchers { watcher.start() }
    let results = Results(clients: scenario.clients)
    let group = DispatchGroup()
    for index in 0..<scenario.clients {
      group.enter()
      let thread = Thread { [scenario, seed, client] in
        var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9)
        var outcomes: [LinearizeClient.Outcome] = []
        for _ in 0..<scenario.operations {
          // A call to be killed is a write (a read killed tells nothing).
          let killed = random.below(100) < scenario.killPercent
          let call = Self.draw(&random, writesOnly: killed)
          let kill = killed ? UInt64(random.below(40)) * 1_000_000 : nil
          do {
            outcomes.append(try client.perform(call, number: index, killAfter: kill))
          } catch {
            outcomes.append(
              LinearizeClient.Outcome(
                operation: .init(
                  client: index, call: call, start: Monotonic.now(), end: nil, response: .unknown),
                killed: false, problem: "c\(index) \(call): cannot start sessionctl: \(error)", changes: [],
                since: client.initial.head))
          }
        }
        results.outcomes.withLock { $0[index] = outcomes }
        group.leave()
      }
      thread.name = "linearize client \(index)"
      thread.start()
    }
    group.wait()
    let outcomes = results.outcomes.withLock { $0 }.flatMap { $0 }
    // The log as it stands once every client is done, and the watchers brought up to it.
    let start = Monotonic.now()
    let log = try client.log()
    let end = Monotonic.now()
    let head = log.keys.max() ?? 0
    for watcher in watchers { watcher.finish(at: head) }

    var problems = outcomes.compactMap(\.problem)
    var history = Self.resolve(outcomes, log, after: initial.head)
    counts.operations += history.count
    counts.killed += outcomes.count(where: \.killed)
    counts.noChange += history.count { if case .noChange = $0.response { true } else { false } }
    counts.refused += history.count { $0.response == .refused }
    // The log read at the end is the last read: every entry of it is explained by then.
    let final = try Self.roster(log)
    history.append(
      .init(
        client: -1, call: .history, start: start, end: end,
        response: .observed(cursor: final.head, state: final.values)))
    problems += Self.logProblems(log, head: head)
    problems += outcomes.flatMap { $0.entries(against: log) }
    for watcher in watchers {
      let found = watcher.check(against: log, head: head)
      problems += found.problems
      counts.delivered += found.delivered
      counts.watchRestarts += found.restarts
    }
    do {
      try Linearizability.check(history, from: initial)
    } catch {
      problems.append("not linearizable (seed \(seed)): \(error)")
    }
    return problems
  }

  /// The log's cursors run from its first to its head without a hole.
  static func logProblems(_ log: [Int64: String], head: Int64) -> [String] {
    let first = log.keys.min() ?? 1
    return log.count == Int(head - first + 1)
      ? [] : ["the log holds \(log.count) entries for cursors \(first)...\(head): a hole"]
  }

  /// The roster and head `log` (every entry from the first) leads to.
  static func roster(_ log: [Int64: String]) throws -> Linearizability.State {
    var state = Linearizability.State(accounts: [:], active: nil, head: 0)
    for cursor in log.keys.sorted() {
      guard let line = log[cursor], let object = JSONLines.object(line), let change = JSONLines.change(object)
      else { throw TortureFailure("history printed an unreadable change: \(log[cursor] ?? "")") }
      state = state.applying(change)
    }
    return state
  }

  /// The operations to check: the answered ones as they were answered; each write without
  /// an answer (killed, or failed) as one that made some of the entries of the log after
  /// `head` (the round's start) that no answer claims, at any time after its call, or
  /// nothing (a logout of every account all of its entries, or none); reads without an
  /// answer are left out, and so are writes without one when every entry is claimed.
  static func resolve(_ outcomes: [LinearizeClient.Outcome], _ log: [Int64: String], after head: Int64)
    -> [Linearizability.Operation]
  {
    var claimed = Set<Int64>()
    for outcome in outcomes {
      switch outcome.operation.response {
      case .change(let change): claimed.insert(change.cursor)
      case .changes(let changes): claimed.formUnion(changes.map(\.cursor))
      default: break
      }
    }
    var unclaimed: [Int64: Linearizability.Change] = [:]
    for (cursor, line) in log where cursor > head && !claimed.contains(cursor) {
      guard let change = JSONLines.object(line).flatMap(JSONLines.change) else { continue }
      unclaimed[cursor] = change
    }
    return outcomes.compactMap { outcome in
      var operation = outcome.operation
      guard operation.response == .unknown else { return operation }
      guard operation.call.isWrite, !unclaimed.isEmpty else { return nil }
      operation.response = .unanswered(unclaimed: unclaimed)
      return operation
    }
  }

  /// A client's next call (a write, with `writesOnly`): writes that often change nothing or
  /// are refused, and reads.
  static func draw(_ random: inout SplitMix64, writesOnly: Bool = false) -> Linearizability.Call {
    func name() -> String { names[random.below(names.count)] }
    switch random.below(writesOnly ? 34 : 44) {
    case 0..<8: return .login(name())
    case 8..<12: return .logout
    case 12..<15: return .logoutAccount(name())
    case 15, 16: return .logoutAll
    case 17..<21: return .rename(name())
    case 21..<24: return .renameAccount(name(), to: name())
    case 24..<30: return .switchTo(name())
    case 30..<34: return .remove(name())
    case 34..<38: return .status
    default: return .history
    }
  }
}

extension LinearizeRound {
  typealias Counts = LinearizeScenario.Counts

  /// What each client's thread hands back.
  final class Results: Sendable {
    let outcomes: Mutex<[[LinearizeClient.Outcome]]>

    init(clients: Int) { outcomes = Mutex(Array(repeating: [], count: clients)) }
  }
}
