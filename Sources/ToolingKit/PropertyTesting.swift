import Foundation

// What randomized, replayable runs need (the differential test, the chaos driver, the CLI
// fuzzer): a seeded generator whose sequence a seed fixes everywhere, the seeds to run, and
// a shrinker that cuts a failing sequence down to the steps it needs.

/// SplitMix64: a small seeded generator whose sequence is the same on every platform and
/// Swift version, so that a seed replays a run. ``below(_:)`` and ``pick(_:)`` are fixed by
/// the seed too; the standard library's `random(in:using:)` may change between versions.
package struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64

  package init(seed: UInt64) { state = seed }

  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var mixed = state
    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
    return mixed ^ (mixed >> 31)
  }

  /// A number in `0..<count` (`count` > 0).
  package mutating func below(_ count: Int) -> Int { Int(next() % UInt64(count)) }

  /// An element of `choices` (not empty).
  package mutating func pick<Element>(_ choices: [Element]) -> Element { choices[below(choices.count)] }
}

/// The seeds a run asks for in its environment: `NAME_SEED=S` replays seed S alone,
/// `NAME_SEEDS=N` draws N fresh seeds from the time; nil when neither is set.
package func seedsFromEnvironment(_ name: String) -> [UInt64]? {
  let environment = ProcessInfo.processInfo.environment
  if let seed = environment["\(name)_SEED"].flatMap({ UInt64($0) }) { return [seed] }
  guard let count = environment["\(name)_SEEDS"].flatMap({ Int($0) }), count > 0 else { return nil }
  var random = SplitMix64(seed: UInt64(Date().timeIntervalSince1970 * 1_000_000))
  return (0..<count).map { _ in random.next() }
}

/// Cuts a failing sequence down by leaving out chunks while it still fails: halves, then
/// quarters, … then single steps, trying a chunk size again after a pass removed something.
///
/// It proposes candidates and is told whether each failed, so that the caller runs them as
/// it needs (blocking, or awaiting) and stops at its own deadline:
///
/// ```swift
/// var shrinker = Shrinker(steps)
/// while let candidate = shrinker.candidate, clock.now < deadline {
///   shrinker.record(failed: try fails(candidate))
/// }
/// return shrinker.shortest
/// ```
package struct Shrinker<Element> {
  /// The shortest sequence known to fail.
  package private(set) var shortest: [Element]
  private let minimumCount: Int
  private var chunk: Int
  private var start = 0
  private var removedInPass = false

  /// A shrinker of `failing`, which fails; no candidate is shorter than `minimumCount`.
  package init(_ failing: [Element], minimumCount: Int = 1) {
    shortest = failing
    self.minimumCount = minimumCount
    chunk = max(1, failing.count / 2)
    skipShortCandidates()
  }

  /// The next sequence to try; nil when no chunk can be left out any more.
  package var candidate: [Element]? {
    guard chunk >= 1, start < shortest.count else { return nil }
    var candidate = shortest
    candidate.removeSubrange(start..<min(start + chunk, shortest.count))
    return candidate
  }

  /// Whether ``candidate`` failed too: if so it becomes ``shortest``.
  package mutating func record(failed: Bool) {
    if failed, let candidate {
      shortest = candidate
      removedInPass = true
    } else {
      start += chunk
    }
    skipShortCandidates()
  }

  /// Moves past the candidates that would be too short, and on to the next pass at the end
  /// of one: the same chunk size after a pass that removed something, else half of it.
  private mutating func skipShortCandidates() {
    while chunk >= 1 {
      while start < shortest.count, shortest.count - min(chunk, shortest.count - start) < minimumCount {
        start += chunk
      }
      if start < shortest.count { return }
      if !removedInPass { chunk /= 2 }
      start = 0
      removedInPass = false
      if chunk >= 1, shortest.count <= minimumCount { chunk = 0 }
    }
  }
}
