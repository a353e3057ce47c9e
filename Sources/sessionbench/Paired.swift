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
