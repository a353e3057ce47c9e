import Testing

@testable import sessionbench

/// What `sessionbench` prints: which way each figure is better, and the aims judged only in
/// a full run (a quick run's figures are not to be quoted, let alone held against the aims).
struct BenchmarkReportTests {
  static let measurements = [
    Measurement(scenario: "write-normal", metric: .opsPerSecond, ours: 900, baseline: 1000),
    Measurement(scenario: "write-normal", metric: .p50, ours: 20, baseline: 10),
    Measurement(scenario: "idle", metric: .cpuPercent, ours: 0.02, baseline: 0.01),
    Measurement(scenario: "history", metric: .bytesPerChange, ours: 85.5, baseline: nil),
  ]
  static let verdicts = [
    Verdict(scenario: "write-normal", aim: "ops/s ≥ 0.95× raw", measured: "0.90×", met: false),
    Verdict(scenario: "idle", aim: "cpu < 0.1% of a core", measured: "0.0200%", met: true),
  ]

  @Test func tableSaysWhichWayIsBetter() {
    let lines = Report.table(Self.measurements).split(separator: "\n").map(String.init)
    #expect(lines[0].hasPrefix("scenario              metric        better          ours"))
    #expect(
      lines[2].hasPrefix("write-normal          ops/s         higher           900        1 000     0.90×"))
    #expect(
      lines[3].hasPrefix("                      p50 µs        lower           20.0         10.0     2.00×"))
    #expect(
      lines[4].hasPrefix("idle                  cpu %         lower          0.020        0.010     2.00×"))
    #expect(
      lines[5].hasPrefix("history               bytes/change  lower           85.5            –         –"))
  }

  @Test func fullRunJudgesTheAims() {
    let output = Report.output(Self.measurements, verdicts: Self.verdicts, quick: false)
    #expect(
      output.contains("\n\naims (ours/raw from this run):\nMISSED  write-normal      ops/s ≥ 0.95× raw"))
    #expect(output.contains("\nmet     idle              cpu < 0.1% of a core"))
    #expect(!output.contains("quick"))
  }

  @Test func quickRunJudgesNothing() {
    let output = Report.output(Self.measurements, verdicts: Self.verdicts, quick: true)
    #expect(output.hasPrefix(Report.table(Self.measurements) + "\n"))
    #expect(!output.contains("MISSED"))
    #expect(!output.contains("met "))
    #expect(output.contains("\n\naims: not judged (quick run)\n"))
    #expect(output.hasSuffix("\n\n(--quick: smoke-test sizes; do not quote these figures)\n"))
  }
}
