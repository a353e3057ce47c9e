import CommandLineKit
import Foundation
import SessionStoragePostgres
import Synchronization
import ToolingKit

/// `chaos`: random steps drawn from a seed — store instances opened and released (by
/// path, symbolic link and relative path), writes through any of them, the sqlite3 shell,
/// Python and sessionctl, compaction and retention, subscribers in this and other
/// processes started, cancelled and resumed, writer processes killed, failing their
/// fsyncs or staying alive, snapshots under load, checkpoints, backups restored — with a
/// model (``ChaosModel``) that every outcome is checked against as it happens, and the
/// file, every instance and every subscriber after every step.
///
/// Every committed change must reach every live subscriber within `--bound-ms` of being
/// acknowledged; a step and its check must each end within `--hang-seconds`. On a failure
/// it prints the seed, the step and the problem, then looks for the shortest failing run:
/// the prefix up to the failing step, replayed, then with steps left out. With a
/// `postgresql://` URL as `--db`, the steps that make sense there run on a schema of that
/// server, with `psql` as the outside client (``ChaosBackend``).
struct ChaosScenario: TortureScenario {
  static let seed = CommandLineOption<UInt64>(
    "seed", help: "The seed the steps are drawn from (default: a random one); with --long, the first.")
  static let steps = CommandLineOption<Int>("steps", placeholder: "n", help: "Steps per run (default 300).")
  static let script = CommandLineOption<String>(
    "script", placeholder: "name",
    help: "A fixed run instead of steps drawn from the seed: "
      + ChaosScript.allCases.map(\.rawValue).joined(separator: ", ") + ".")
  static let sessionctl = CommandLineOption<String>(
    "sessionctl", placeholder: "path", help: "The sessionctl binary (without it, no sessionctl steps).",
    completesFiles: true)
  static let shrinkSeconds = CommandLineOption<Int>(
    "shrink-seconds", placeholder: "seconds",
    help: "How long a failure may be shrunk to the shortest failing run (default 60).")
  static let bound = CommandLineOption<Int>(
    "bound-ms", placeholder: "ms",
    help: "How soon after it is acknowledged a change must reach every live subscriber (default 600).")
  static let hangSeconds = CommandLineOption<Int>(
    "hang-seconds", placeholder: "seconds",
    help: "How long a step, and the check after it, may run before the run fails as hung (default 20).")

  static let spec = CommandSpec(
    "chaos",
    abstract: "Random steps (instances, processes, shell, kills, compaction, retention, failing fsyncs, "
      + "subscribers) checked against a model as they run and after every step.",
    options: [seed, steps, script, Torture.long, sessionctl, shrinkSeconds, bound, hangSeconds])

  let path: String
  let seed: UInt64
  let steps: Int
  let script: ChaosScript?
  let deadline: Date?
  let sessionctl: String?
  let shrinkSeconds: Int
  let boundMilliseconds: Int
  let hangLimit: Duration

  init(_ arguments: ParsedArguments) throws {
    path = try arguments.required(Torture.db)
    seed = try arguments[Self.seed] ?? UInt64(UInt32.random(in: 0...UInt32.max))
    steps = try arguments[Self.steps] ?? 300
    script = try arguments[Self.script].map { name in
      guard let script = ChaosScript(rawValue: name) else {
        throw InvalidValue(
          expected: "one of " + ChaosScript.allCases.map(\.rawValue).joined(separator: ", "), noun: "run",
          text: name, name: "--script")
      }
      guard try arguments[Self.steps] == nil else {
        throw InvalidValue(
          expected: "no --steps with it (a fixed run has its own)", text: name, name: "--script")
      }
      return script
    }
    deadline = try Torture.deadline(arguments)
    sessionctl = try arguments[Self.sessionctl]
    shrinkSeconds = try arguments[Self.shrinkSeconds] ?? 60
    boundMilliseconds = try arguments[Self.bound] ?? 600
    hangLimit = .seconds(try arguments[Self.hangSeconds] ?? 20)
  }

  /// The steps of a run of `seed`: the fixed run's, or those drawn from it.
  func steps(of seed: UInt64) -> [ChaosStep] { script?.steps ?? draw(seed, count: steps) }

  /// The steps of `seed`, in order.
  func draw(_ seed: UInt64, count: Int) -> [ChaosStep] {
    var random = SplitMix64(seed: seed)
    return (0..<count).map { _ in
      ChaosStep.draw(using: &random, sessionctl: sessionctl != nil, postgres: isPostgres)
    }
  }

  /// Whether `--db` names a PostgreSQL server (`postgresql://…`): each run then gets a
  /// schema of its own there, dropped when the run passes.
  var isPostgres: Bool { PostgresLocation.isURL(path) }

  /// `--db` as reports print it: a URL's passwords replaced by `***`.
  var shownPath: String { isPostgres ? PostgresLocation.redacted(path) : path }

  /// What a run found: the index of the first step after which a check failed, and why.
  struct Failure {
    var step: Int
    var problems: [String]
  }

  /// What a run counted.
  struct Counts {
    var acknowledged = 0
    var delivered = 0
    var failedWrites = 0
    /// Unacknowledged writes of killed writers that appeared later.
    var appeared = 0
    /// Writes refused as the model predicted (a name another account holds), nothing written.
    var refused = 0

    static func += (total: inout Counts, run: Counts) {
      total.acknowledged += run.acknowledged
      total.delivered += run.delivered
      total.failedWrites += run.failedWrites
      total.appeared += run.appeared
      total.refused += run.refused
    }
  }

  /// Arms the hang limit for `what` of step `index` of `seed`'s run.
  private func guardHang(_ seed: UInt64, _ index: Int, _ step: ChaosStep?, _ what: String, shrinking: Bool) {
    let place = step.map { "step \(index + 1) (\($0))" } ?? "the end of the run"
    ChaosWatchdog.shared.arm(
      hangLimit,
      report: [
        "seed \(seed)\(shrinking ? " (while shrinking the failure above)" : "") hung in \(what)\(place): "
          + "it ran past the limit of \(hangLimit)",
        "replay: sessiontorture chaos --seed \(seed) --steps \(index + 1) --db \(shownPath)",
      ],
      summary: #"{"scenario":"chaos","seed":\#(self.seed),"hung":true,"problems":1}"#)
  }

  /// Runs `steps` on a fresh file at `file` (or a fresh schema of the PostgreSQL server it
  /// names), checking after each; returns the first failure.
  func play(_ steps: [ChaosStep], on file: String, seed: UInt64, shrinking: Bool = false) throws -> (
    failure: Failure?, counts: Counts
  ) {
    let schema = "chaos_\(seed)_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    let (backend, name) = try ChaosBackend.of(file, schema: schema)
    let world = try ChaosWorld(
      path: name, backend: backend, sessionctl: sessionctl, bound: .milliseconds(boundMilliseconds))
    var passed = false
    defer {
      world.tearDown()
      // A failed run's schema stays for a look (the report names it); a shrinking run's goes.
      if passed || shrinking {
        backend.dispose()
      } else if backend.isPostgres {
        report("the run's schema: \(schema)")
      }
    }
    func counts() -> Counts {
      Counts(
        acknowledged: world.acknowledged, delivered: world.delivered, failedWrites: world.failedWrites,
        appeared: world.appeared, refused: world.refused)
    }
    for (index, step) in steps.enumerated() {
      guardHang(seed, index, step, "", shrinking: shrinking)
      var problems = world.apply(step)
      guardHang(seed, index, step, "the check after ", shrinking: shrinking)
      problems += world.check()
      ChaosWatchdog.shared.disarm()
      if !problems.isEmpty { return (Failure(step: index, problems: problems), counts()) }
    }
    guardHang(seed, steps.count, nil, "", shrinking: shrinking)
    defer { ChaosWatchdog.shared.disarm() }
    var problems = world.catchUp()
    world.tearDown()
    // With every connection closed, the next open runs the WAL recovery: a killed writer's
    // unacknowledged write may appear there.
    do { try world.takeUnacknowledgedIfItAppeared() } catch { problems.append("\(error)") }
    let total = counts()
    let kept = Set(world.model.log.keys.filter { $0 >= world.model.firstAvailable })
    // Every instance released: a new one reads what a fresh process reads.
    problems += try Verification.problems(of: backend.open(name, origin: "verifier"), acknowledged: kept)
    passed = problems.isEmpty
    return (passed ? nil : Failure(step: steps.count, problems: problems), total)
  }

  func run() throws -> Int32 {
    var seed = self.seed
    var runs = 0
    var totalSteps = 0
    var total = Counts()
    var found: (seed: UInt64, failure: Failure, steps: [ChaosStep])?
    repeat {
      let steps = steps(of: seed)
      let (failure, counts) = try play(steps, on: path, seed: seed)
      runs += 1
      totalSteps += failure.map { $0.step + 1 } ?? steps.count
      total += counts
      if let failure {
        found = (seed, failure, Array(steps.prefix(failure.step + 1)))
        break
      }
      seed &+= 1
    } while deadline.map { Date() < $0 } ?? false
    ChildChannel.say(
      #"{"scenario":"chaos","seed":\#(self.seed),"runs":\#(runs),"steps":\#(totalSteps),"acknowledged":\#(total.acknowledged),"delivered":\#(total.delivered),"failedWrites":\#(total.failedWrites),"appeared":\#(total.appeared),"refused":\#(total.refused),"problems":\#(found?.failure.problems.count ?? 0)}"#
    )
    guard let found else { return 0 }
    report(
      "seed \(found.seed) failed after step \(found.failure.step + 1) (\(found.steps.last.map(\.description) ?? "the end")):"
    )
    for problem in found.failure.problems { report("problem: \(problem)") }
    report("replay: sessiontorture chaos --seed \(found.seed) --steps \(found.steps.count) --db \(shownPath)")
    let shortest = try shrink(found.steps, seed: found.seed)
    report("shortest failing run found (\(shortest.count) steps):")
    for (index, step) in shortest.enumerated() { report("  \(index + 1). \(step)") }
    return 1
  }

  /// Leaves out ever smaller chunks of `steps` while the run still fails, within
  /// `--shrink-seconds`. Timing-dependent failures may not replay; then `steps` is kept.
  func shrink(_ steps: [ChaosStep], seed: UInt64) throws -> [ChaosStep] {
    let deadline = Date().addingTimeInterval(TimeInterval(shrinkSeconds))
    let scratch = isPostgres ? path : path + ".shrink"
    func fails(_ candidate: [ChaosStep]) throws -> Bool {
      try play(candidate, on: scratch, seed: seed, shrinking: true).failure != nil
    }
    defer {
      if !isPostgres {
        for suffix in ["", "-wal", "-shm", ".link", ".backup", ".stderr"] { unlink(scratch + suffix) }
      }
    }
    var shrinker = Shrinker(steps)
    while let candidate = shrinker.candidate, Date() < deadline {
      shrinker.record(failed: try fails(candidate))
    }
    return shrinker.shortest
  }

  private func report(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}

/// Fixed runs of the chaos driver (`--script`): what drawn runs show only when their timing
/// lines up, set up by construction and checked by the same model.
enum ChaosScript: String, CaseIterable, Sendable {
  /// The driver's first instance released (its clean close, the last, would checkpoint the
  /// WAL and delete it); a subscriber process holds the file while a writer is killed as it
  /// enters its third `fsync` of the `-wal`, a commit's (its second or third, after a new
  /// WAL's header): the commits before it are acknowledged, this one is in the WAL and not
  /// in the wal-index, and nobody sees it. Then the subscriber process ends without a
  /// checkpoint (SIGTERM), and the next process that opens the file runs the WAL recovery:
  /// the write appears, once, at the next cursor, exactly as issued.
  case killedWriterAppears = "killed-writer-appears"

  var steps: [ChaosStep] {
    switch self {
    case .killedWriterAppears:
      [.release(0), .startChildSubscriber, .killedAtSync(writes: 4, when: 3), .stopChildSubscriber(0)]
    }
  }
}

/// The hang limit: a thread that, when a step or its check runs past its limit, prints the
/// seed and the replay command, kills the driver's processes and exits with 1. A blocked
/// call cannot be cancelled from outside; ending the process is the bounded way out.
final class ChaosWatchdog: Sendable {
  static let shared = ChaosWatchdog()

  private struct Armed {
    var deadline: UInt64
    var report: [String]
    var summary: String
  }

  private let armed = Mutex<Armed?>(nil)
  private let children = Mutex<Set<pid_t>>([])
  private let started = Mutex(false)

  /// Ends the process unless ``disarm()`` or another `arm` comes within `limit`; `report`
  /// goes to standard error, `summary` to standard output.
  func arm(_ limit: Duration, report: [String], summary: String) {
    startIfNeeded()
    let deadline = Monotonic.now() + UInt64(limit.milliseconds) * 1_000_000
    armed.withLock { $0 = Armed(deadline: deadline, report: report, summary: summary) }
  }

  func disarm() { armed.withLock { $0 = nil } }

  /// A process to kill at the limit.
  func track(_ pid: pid_t) { _ = children.withLock { $0.insert(pid) } }

  /// A process that was reaped.
  func untrack(_ pid: pid_t) { _ = children.withLock { $0.remove(pid) } }

  private func startIfNeeded() {
    let first = started.withLock { started in
      defer { started = true }
      return !started
    }
    guard first else { return }
    let thread = Thread { [self] in
      while true {
        usleep(100_000)
        let expired = armed.withLock { armed in armed.flatMap { Monotonic.now() > $0.deadline ? $0 : nil } }
        if let expired { end(expired) }
      }
    }
    thread.name = "ChaosWatchdog"
    thread.start()
  }

  private func end(_ armed: Armed) -> Never {
    FileHandle.standardError.write(Data(armed.report.map { $0 + "\n" }.joined().utf8))
    ChildChannel.say(armed.summary)
    for pid in children.withLock({ $0 }) { kill(pid, SIGKILL) }
    _exit(1)
  }
}
