import Dispatch
import Foundation
import Synchronization
import SystemKit
import ToolingKit

/// Latencies of one side (ours or the baseline) of a scenario, and the throughput they
/// were measured at.
struct Sample {
  /// One latency per operation, in nanoseconds.
  var latencies: [UInt64] = []
  /// Operations completed in the timed blocks.
  var operations = 0
  /// Wall time of the timed blocks, in nanoseconds.
  var elapsed: UInt64 = 0

  /// Operations per second over the timed blocks.
  var opsPerSecond: Double {
    elapsed == 0 ? .nan : Double(operations) * 1e9 / Double(elapsed)
  }

  /// The latency at quantile `q` (0…1) in microseconds, nearest rank.
  func percentile(_ q: Double) -> Double {
    guard !latencies.isEmpty else { return .nan }
    let sorted = latencies.sorted()
    let rank = Int((Double(sorted.count) * q).rounded(.up)) - 1
    return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1000
  }

  /// The median latency in microseconds.
  var p50: Double { percentile(0.50) }
  /// The 99th-percentile latency in microseconds.
  var p99: Double { percentile(0.99) }

  /// Adds the operations and latencies of `other`.
  mutating func merge(_ other: Sample) {
    latencies += other.latencies
    operations += other.operations
    elapsed += other.elapsed
  }
}

/// Runs our code and the baseline in alternating timed blocks, so that whatever else the
/// machine does during the run falls on both sides alike.
enum Paired {
  /// `rounds` blocks of `block` nanoseconds per side, after `warmup` untimed operations
  /// each. Each side's closure receives its own running operation number.
  static func blocks(
    rounds: Int, block: UInt64, warmup: Int = 200, ours: (Int) throws -> Void, raw: (Int) throws -> Void
  ) throws -> (ours: Sample, raw: Sample) {
    var (oursIndex, rawIndex) = (0, 0)
    for _ in 0..<warmup {
      try ours(oursIndex)
      oursIndex += 1
      try raw(rawIndex)
      rawIndex += 1
    }
    var (oursSample, rawSample) = (Sample(), Sample())
    for round in 0..<rounds {
      if round.isMultiple(of: 2) {
        try timed(ours, index: &oursIndex, block: block, into: &oursSample)
        try timed(raw, index: &rawIndex, block: block, into: &rawSample)
      } else {
        try timed(raw, index: &rawIndex, block: block, into: &rawSample)
        try timed(ours, index: &oursIndex, block: block, into: &oursSample)
      }
    }
    return (oursSample, rawSample)
  }

  /// Runs `operation` for `block` nanoseconds, timing each call.
  private static func timed(
    _ operation: (Int) throws -> Void, index: inout Int, block: UInt64, into sample: inout Sample
  ) throws {
    sample.latencies.reserveCapacity(sample.latencies.count + 100_000)
    let start = Monotonic.now()
    var now = start
    var count = 0
    repeat {
      let before = now
      try operation(index)
      index += 1
      count += 1
      now = Monotonic.now()
      sample.latencies.append(now - before)
    } while now - start < block
    sample.operations += count
    sample.elapsed += now - start
  }

  /// One write at a time: announce the cursor, take the time, write, wait until all
  /// subscribers have it; the latency is the slowest subscriber's. `write` returns the
  /// cursor the write reported, or nil when it cannot tell (raw writes).
  static func pingPong(
    count: Int, arrivals: Arrivals, subscribers: Int, head: inout Int64, write: (Int) throws -> Int64?
  ) throws -> Sample {
    var sample = Sample()
    sample.latencies.reserveCapacity(count)
    let start = Monotonic.now()
    for index in 0..<count {
      let expected = head + 1
      arrivals.expect(expected, count: subscribers)
      let before = Monotonic.now()
      if let cursor = try write(index), cursor != expected {
        throw BenchError("the write returned cursor \(cursor), expected \(expected)")
      }
      let times = try arrivals.wait()
      sample.latencies.append((times.max() ?? before) &- before)
      head = expected
    }
    sample.operations = count
    sample.elapsed = Monotonic.now() - start
    return sample
  }
}

/// Where subscribers report the entries they received, and where the writer waits until
/// all of them have the entry it wrote (one write at a time).
final class Arrivals: Sendable {
  private struct State {
    var cursor: Int64 = -1
    var expected = 0
    var times: [UInt64] = []
    var unexpected: [Int64] = []
  }

  private let state = Mutex(State())
  private let complete = DispatchSemaphore(value: 0)

  /// Announces the cursor of the next write and how many subscribers must report it.
  func expect(_ cursor: Int64, count: Int) {
    state.withLock { state in
      state.cursor = cursor
      state.expected = count
      state.times.removeAll(keepingCapacity: true)
    }
  }

  /// A subscriber received `cursor` at `time` (``Monotonic/now()``).
  func arrive(_ cursor: Int64, at time: UInt64) {
    let done = state.withLock { state in
      guard cursor == state.cursor, state.times.count < state.expected else {
        state.unexpected.append(cursor)
        return false
      }
      state.times.append(time)
      return state.times.count == state.expected
    }
    if done { complete.signal() }
  }

  /// Waits until every subscriber reported the expected cursor; returns their times.
  func wait(timeout: Duration = .seconds(10)) throws -> [UInt64] {
    guard complete.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) == .success else {
      let (cursor, got, expected) = state.withLock { ($0.cursor, $0.times.count, $0.expected) }
      throw BenchError("only \(got) of \(expected) subscribers received cursor \(cursor) within \(timeout)")
    }
    return try state.withLock { state in
      guard state.unexpected.isEmpty else {
        throw BenchError(
          "subscribers reported cursors out of turn: \(state.unexpected.prefix(10)) while waiting for \(state.cursor)"
        )
      }
      return state.times
    }
  }
}
