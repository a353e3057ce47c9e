import Foundation

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
