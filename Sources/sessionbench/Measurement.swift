/// One figure of one scenario, ours beside the raw-SQLite baseline.
struct Measurement {
  /// What a figure measures; the raw value is its name in the JSON output.
  enum Metric: String {
    case opsPerSecond = "ops_per_s"
    case p50 = "p50_us"
    case p99 = "p99_us"
    case cpuPercent = "cpu_percent"
    case bytesPerChange = "bytes_per_change"
    case instructionsPerOperation = "instructions_per_op"

    /// The column label in the table.
    var label: String {
      switch self {
      case .opsPerSecond: "ops/s"
      case .p50: "p50 µs"
      case .p99: "p99 µs"
      case .cpuPercent: "cpu %"
      case .bytesPerChange: "bytes/change"
      case .instructionsPerOperation: "instr/op"
      }
    }

    /// Whether a larger figure is the better one: throughput; for times, CPU and bytes the
    /// smaller is better. The same holds for the ratio ours ÷ raw.
    var higherIsBetter: Bool { self == .opsPerSecond }
  }

  let scenario: String
  let metric: Metric
  let ours: Double
  /// Nil where a scenario has no baseline for this figure.
  let baseline: Double?

  /// ours ÷ baseline, when both exist and the baseline is not zero.
  var ratio: Double? {
    guard let baseline, baseline != 0, baseline.isFinite, ours.isFinite else { return nil }
    return ours / baseline
  }

  /// The three figures of a latency sample: throughput, p50 and p99.
  static func latency(_ scenario: String, ours: Sample, baseline: Sample?) -> [Measurement] {
    [
      Measurement(
        scenario: scenario, metric: .opsPerSecond, ours: ours.opsPerSecond, baseline: baseline?.opsPerSecond),
      Measurement(scenario: scenario, metric: .p50, ours: ours.p50, baseline: baseline?.p50),
      Measurement(scenario: scenario, metric: .p99, ours: ours.p99, baseline: baseline?.p99),
    ]
  }
}

/// An aim of the benchmark issue, checked against the figures of one run.
struct Verdict {
  let scenario: String
  /// The aim in words, e.g. "ops/s ≥ 0.90× raw".
  let aim: String
  /// What was measured, in words.
  let measured: String
  let met: Bool
}

extension Verdict {
  /// A latency aim as ratios to raw from one run: ours/raw at p50 at most `p50`, and at p99
  /// at most `p99` when given.
  static func latency(_ scenario: String, ours: Sample, raw: Sample, p50: Double, p99: Double? = nil)
    -> Verdict
  {
    let ratio50 = ours.p50 / raw.p50
    let ratio99 = ours.p99 / raw.p99
    let aim = String(format: "p50 ≤ %g× raw", p50) + (p99.map { String(format: ", p99 ≤ %g× raw", $0) } ?? "")
    let measured =
      String(format: "p50 %.2f×", ratio50) + (p99 == nil ? "" : String(format: ", p99 %.2f×", ratio99))
    return Verdict(
      scenario: scenario, aim: aim, measured: measured,
      met: ratio50 <= p50 && p99.map { ratio99 <= $0 } ?? true)
  }
}
