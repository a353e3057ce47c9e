import FeedKit
import Foundation
import TestSupport
import Testing
import ToolingKit

@testable import SessionStorage

/// One contract, proven by difference: random sequences of every public operation,
/// with edge arguments, applied to a fresh store on a SQLite file (the reference) and a fresh
/// store in memory; every returned value, thrown error and feed entry must be the same,
/// times aside (both must keep times to the millisecond).
///
/// A fixed set of seeds runs in CI. `DIFFERENTIAL_SEEDS=N swift test --filter DifferentialTests`
/// also runs N random seeds; `DIFFERENTIAL_SEED=S` replays seed S alone. A divergence is
/// reported with its seed, its step, the operation and both results, and the sequence shrunk
/// to the operations it needs. The plans, their generators and the runner are in
/// `DifferentialPlans.swift`; the seeded generator and the shrinker come from ToolingKit.
@Suite struct DifferentialTests {
  /// The seeds CI runs: each draws `operationCount` operations. Among them, seeds 1, 2, 4
  /// and 5 draw origins that only one store could refuse, and every seed checks that the
  /// in-memory store keeps times to the millisecond (seed 3 at its first step).
  static let ciSeeds: [UInt64] = Array(1...32) + [0xD1FF, 0x5E55_1011, 20_261_129]
  static let operationCount = 300

  /// One seed at a time: each holds a SQLite file, its connections and a watcher thread, and
  /// the rest of the suite runs alongside.
  @Test(.serialized, .timeLimit(.minutes(10)), arguments: ciSeeds)
  func bothStoresAgree(seed: UInt64) async throws {
    try await check(seed: seed)
  }

  @Test(
    .enabled(if: Self.extraSeeds != nil, "set DIFFERENTIAL_SEEDS=N or DIFFERENTIAL_SEED=S"),
    .timeLimit(.minutes(600)))
  func bothStoresAgreeOnMoreSeeds() async throws {
    for seed in Self.extraSeeds ?? [] {
      try await check(seed: seed)
    }
  }

  /// The seeds the environment asks for, or nil.
  static var extraSeeds: [UInt64]? { seedsFromEnvironment("DIFFERENTIAL") }

  /// Runs the sequence `seed` draws and records its first divergence, shrunk.
  func check(seed: UInt64) async throws {
    let plan = Plan(seed: seed, count: Self.operationCount)
    var tally = Tally()
    let started = ContinuousClock.now
    let divergence = try await Self.firstDivergence(plan, tally: &tally)
    print("DifferentialTests: seed \(seed): \(tally), \(ContinuousClock.now - started)")
    guard let divergence else { return }
    let shrunk = try await Self.shrink(plan, budget: .seconds(20))
    Issue.record(
      """
      divergence with seed \(seed) (replay: DIFFERENTIAL_SEED=\(seed) swift test --filter DifferentialTests)
      \(divergence)
      shrunk to \(shrunk.plan.operations.count) operations (origins \(shrunk.plan.origins.map(quoted).joined(separator: ", "))), \
      which diverge at:
      \(shrunk.divergence)
      \(shrunk.plan.operations.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n"))
      """)
  }

  // MARK: - Running a plan

  /// What two stores disagreed on first.
  struct Divergence: CustomStringConvertible {
    var step: Int?
    var operation: String
    var sqlite: Outcome
    var memory: Outcome

    var description: String {
      "step \(step.map(String.init) ?? "open"): \(operation)\n  file:      \(sqlite)\n"
        + "  in memory: \(memory)"
    }
  }

  /// What a run did, to show that the operations did something.
  struct Tally: CustomStringConvertible {
    var operations = 0
    var entries = 0
    var noOps = 0
    var errors: [String: Int] = [:]
    var subscriptions = 0
    var delivered = 0

    mutating func count(_ outcome: Outcome) {
      operations += 1
      switch outcome {
      case .entry(.some): entries += 1
      case .entry(nil): noOps += 1
      case .storageError(let code, _): errors["\(code)", default: 0] += 1
      case .feedError(let error):
        errors[Mirror(reflecting: error).children.first?.label ?? "\(error)", default: 0] += 1
      case .otherError(let error): errors[error, default: 0] += 1
      default: break
      }
    }

    var description: String {
      "\(operations) operations, \(entries) entries written, \(noOps) no-op writes, "
        + "errors \(errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")), "
        + "\(subscriptions) subscriptions delivering \(delivered) entries"
    }
  }

  /// Applies `plan` to a fresh SQLite store and a fresh in-memory store, in lockstep.
  static func firstDivergence(_ plan: Plan) async throws -> Divergence? {
    var tally = Tally()
    return try await firstDivergence(plan, tally: &tally)
  }

  static func firstDivergence(_ plan: Plan, tally: inout Tally) async throws -> Divergence? {
    let directory = try TemporaryDirectory()
    var sqlite: Runner?
    var memory: Runner?
    for origin in plan.origins where sqlite == nil {
      let opened = (
        Result { try Subject.sqlite(origin: origin, path: directory.file("session.db")) },
        Result { try Subject.memory(origin: origin) }
      )
      switch opened {
      case (.success(let first), .success(let second)):
        (sqlite, memory) = (Runner(first), Runner(second))
      case (.failure(let first), .failure(let second)) where Outcome(first) == Outcome(second):
        continue
      default:
        return Divergence(
          step: nil, operation: "open with origin \(quoted(origin))",
          sqlite: opened.0.map { _ in .opened }.outcome, memory: opened.1.map { _ in .opened }.outcome)
      }
    }
    guard let sqlite, let memory else { return nil }
    for (step, operation) in plan.operations.enumerated() {
      // Cursors are chosen relative to the reference's bounds, then used on both stores.
      let bounds = (try? sqlite.subject.bounds()) ?? FeedBounds(oldest: nil, head: .zero)
      let first = await sqlite.perform(operation, step: step, bounds: bounds)
      let second = await memory.perform(operation, step: step, bounds: bounds)
      tally.count(first)
      if first != second {
        return Divergence(step: step, operation: operation.description, sqlite: first, memory: second)
      }
    }
    // What each subscription delivers by the end: everything up to the head, read with a
    // bounded number of `next()` calls (they never wait: all of it committed already).
    let head = ((try? sqlite.subject.bounds()) ?? FeedBounds(oldest: nil, head: .zero)).head
    for (first, second) in zip(sqlite.subscriptions, memory.subscriptions) {
      let delivered = (await first.delivered(upTo: head), await second.delivered(upTo: head))
      tally.subscriptions += 1
      if case .entries(let entries) = delivered.0 {
        tally.delivered += entries.count
      } else {
        tally.count(delivered.0)
      }
      if delivered.0 != delivered.1 {
        return Divergence(
          step: first.step,
          operation: "\(plan.operations[first.step]): what the subscription delivered by the end",
          sqlite: delivered.0, memory: delivered.1)
      }
    }
    return nil
  }

  /// The plan with operations removed while it still diverges (``Shrinker``), within `budget`.
  static func shrink(_ plan: Plan, budget: Duration) async throws -> (plan: Plan, divergence: Divergence) {
    let deadline = ContinuousClock.now + budget
    var plan = plan
    guard var divergence = try await firstDivergence(plan) else {
      return (
        plan, Divergence(step: nil, operation: "(did not diverge again)", sqlite: .opened, memory: .opened)
      )
    }
    // Nothing after the divergent step matters, unless a subscription's deliveries diverged.
    if let step = divergence.step, divergence.operation == plan.operations[step].description {
      plan.operations = Array(plan.operations[...step])
    }
    var shrinker = Shrinker(plan.operations, minimumCount: 0)
    while let operations = shrinker.candidate, ContinuousClock.now < deadline {
      var candidate = plan
      candidate.operations = operations
      let found = try await firstDivergence(candidate)
      if let found { divergence = found }
      shrinker.record(failed: found != nil)
    }
    plan.operations = shrinker.shortest
    return (plan, divergence)
  }
}
