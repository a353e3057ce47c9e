import Foundation

/// One figure of one scenario, ours beside the raw-SQLite baseline.
struct Measurement {
  /// What a figure measures; the raw value is its name in the JSON output.
  enum Metric: String {
    case opsPerSecond = "ops_per_s"
    case p50 = "p50_us"
    case p90 = "p90_us"
    case p99 = "p99_us"
    case cpuPercent = "cpu_percent"
    case bytesPerChange = "bytes_per_change"
    case instructionsPerOperation = "instructions_per_op"
    /// The peak resident set of a whole process (GNU time's `%M`).
    case peakRSS = "peak_rss_kib"
    /// A process's resident set at the start of a memory scenario (`VmRSS`).
    case rssStart = "rss_start_kib"
    /// The resident set after the first tenth of the changes.
    case rssTenth = "rss_tenth_kib"
    /// The resident set at the end.
    case rssEnd = "rss_end_kib"
    /// The resident set at the end minus after the first tenth.
    case rssGrowth = "rss_growth_kib"
    /// The resident set added per subscription.
    case kibPerSubscription = "kib_per_subscription"

    /// The column label in the table.
    var label: String {
      switch self {
      case .opsPerSecond: "ops/s"
      case .p50: "p50 µs"
      case .p90: "p90 µs"
      case .p99: "p99 µs"
      case .cpuPercent: "cpu %"
      case .bytesPerChange: "bytes/change"
      case .instructionsPerOperation: "instr/op"
      case .peakRSS: "peak RSS KiB"
      case .rssStart: "RSS start KiB"
      case .rssTenth: "RSS 1/10 KiB"
      case .rssEnd: "RSS end KiB"
      case .rssGrowth: "growth KiB"
      case .kibPerSubscription: "KiB/subscr."
      }
    }

    /// Whether a larger figure is the better one: throughput; for times, CPU, bytes and
    /// memory the smaller is better. The same holds for the ratio ours ÷ raw.
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

/// An aim of the benchmark (see BENCHMARKS.md), checked against the figures of one run.
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

/// Prints the figures as a table for people and writes them as JSON for machines.
enum Report {
  /// What a run prints on standard output: the table, then the aims. The aims are judged
  /// only in a full run; a quick run's figures come from samples too small to hold against
  /// them (and are not to be quoted), so it says so instead of printing verdicts.
  static func output(_ measurements: [Measurement], verdicts: [Verdict], quick: Bool) -> String {
    var text = table(measurements) + "\n"
    if !verdicts.isEmpty {
      text +=
        quick
        ? "\naims: not judged (quick run)\n"
        : "\naims (ours/raw from this run):\n" + self.verdicts(verdicts) + "\n"
    }
    if quick { text += "\n(--quick: smoke-test sizes; do not quote these figures)\n" }
    return text
  }

  /// The table: one line per figure, with which way is better, ours, the baseline and the
  /// ratio.
  static func table(_ measurements: [Measurement]) -> String {
    var lines = [
      pad("scenario", 22) + pad("metric", 14) + pad("better", 7) + left("ours", 13) + left("raw", 13)
        + left("ours/raw", 10)
    ]
    lines.append(String(repeating: "─", count: lines[0].count))
    var previous = ""
    for measurement in measurements {
      let name = measurement.scenario == previous ? "" : measurement.scenario
      previous = measurement.scenario
      lines.append(
        pad(name, 22) + pad(measurement.metric.label, 14)
          + pad(measurement.metric.higherIsBetter ? "higher" : "lower", 7)
          + left(number(measurement.ours), 13) + left(measurement.baseline.map(number) ?? "–", 13)
          + left(measurement.ratio.map { String(format: "%.2f×", $0) } ?? "–", 10))
    }
    return lines.joined(separator: "\n")
  }

  /// The aims, one line each.
  static func verdicts(_ verdicts: [Verdict]) -> String {
    verdicts.map { verdict in
      pad(verdict.met ? "met" : "MISSED", 8) + pad(verdict.scenario, 18) + pad(verdict.aim, 34)
        + verdict.measured
    }.joined(separator: "\n")
  }

  /// A JSON array of flat objects `{"scenario", "metric", "ours", "baseline"}`.
  static func json(_ measurements: [Measurement]) -> String {
    let objects = measurements.map { measurement in
      "  {\"scenario\": \(quoted(measurement.scenario)), \"metric\": \(quoted(measurement.metric.rawValue)), "
        + "\"ours\": \(jsonNumber(measurement.ours)), \"baseline\": \(measurement.baseline.map(jsonNumber) ?? "null")}"
    }
    return "[\n" + objects.joined(separator: ",\n") + "\n]\n"
  }

  private static func jsonNumber(_ value: Double) -> String {
    value.isFinite ? String(format: "%.3f", value) : "null"
  }

  private static func quoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result + "\""
  }

  /// A figure with a precision that suits its size, digits grouped in thousands.
  static func number(_ value: Double) -> String {
    guard value.isFinite else { return "–" }
    if abs(value) >= 1000 {
      let digits = String(Int64(value.rounded()))
      var grouped = ""
      for (index, character) in digits.reversed().enumerated() {
        if index > 0, index % 3 == 0, character != "-" { grouped.append(" ") }
        grouped.append(character)
      }
      return String(grouped.reversed())
    }
    if abs(value) >= 100 { return String(format: "%.0f", value) }
    if abs(value) >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.3f", value)
  }

  private static func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
  }

  private static func left(_ text: String, _ width: Int) -> String {
    text.count >= width ? " " + text : String(repeating: " ", count: width - text.count) + text
  }
}
