/// How much work each scenario does: the full run, or `--quick` (seconds in all, for CI
/// smoke tests; its figures are not meant to be quoted).
struct Scale {
  let quick: Bool
  /// Alternating blocks per side for the throughput scenarios.
  let rounds: Int
  /// Length of one timed block of writes, in nanoseconds.
  let writeBlock: UInt64
  /// Length of one timed block of reads, in nanoseconds.
  let readBlock: UInt64
  /// Writes per side in the delivery scenarios.
  let deliveries: Int
  /// Writes per side in `fanout`.
  let fanoutWrites: Int
  /// How long `idle` watches the subscribers, in seconds.
  let idleSeconds: Double
  /// Changes in the log for `history`.
  let historyChanges: Int

  init(quick: Bool) {
    self.quick = quick
    rounds = quick ? 2 : 6
    writeBlock = quick ? 100_000_000 : 500_000_000
    readBlock = quick ? 50_000_000 : 250_000_000
    deliveries = quick ? 200 : 5_000
    fanoutWrites = quick ? 40 : 1_000
    idleSeconds = quick ? 1 : 10
    historyChanges = quick ? 10_000 : 1_000_000
  }
}

/// What a scenario produced: figures, and the aims it checked.
struct Outcome {
  var measurements: [Measurement] = []
  var verdicts: [Verdict] = []
}
