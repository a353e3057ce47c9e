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
