import Foundation
import TestSupport
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

/// `sessionbench --postgres URL`: the server of the `pg-*` scenarios, checked before anything
/// runs; a full run includes those scenarios only when it has a server.
struct BenchmarkPostgresArgumentsTests {
  @Test func aServerURLIsPassedOnAndTheScenariosAreNamed() throws {
    let url = "postgresql://bench@db.example:5432/sessions"
    #expect(
      try Command.parse(["--postgres", url, "pg-write"])
        == .bench(
          quick: false, json: nil, scenarios: ["pg-write"], postgres: url, named: true, sessionctl: nil))
    #expect(
      try Command.parse(["--quick"])
        == .bench(
          quick: true, json: nil, scenarios: Scenarios.names, postgres: nil, named: false, sessionctl: nil))
    #expect(
      Scenarios.names.suffix(6) == [
        "pg-write", "pg-write-100", "pg-read", "pg-read-100", "pg-deliver-remote", "pg-deliver-remote-100",
      ])
    #expect(
      try Command.parse(["--postgres", url, "pg-write-100", "pg-read-100", "pg-deliver-remote-100"])
        == .bench(
          quick: false, json: nil, scenarios: ["pg-write-100", "pg-read-100", "pg-deliver-remote-100"],
          postgres: url, named: true, sessionctl: nil))
  }

  @Test(arguments: [
    ("sqlite:///tmp/x.db", "is not a PostgreSQL URL"),
    ("postgresql://u:pw@host/db?schema=mine", "names a schema"),
  ])
  func aBadServerURLIsAUsageError(url: String, message: String) throws {
    let error = try #require(throws: (any Error).self) { try Command.parse(["--postgres", url]) }
    let text = String(describing: error)
    #expect(text.contains(message), "\(text)")
    #expect(!text.contains("pw@"), "the password is printed: \(text)")
  }

  @Test func theHiddenChildrenTakeTheServerAndTheSchema() throws {
    #expect(
      try Command.parse(["child-pg-raw-listener", "--postgres", "postgresql://h/db", "--schema", "s"])
        == .childPostgresRawListener(server: "postgresql://h/db", schema: "s"))
    #expect(throws: (any Error).self) {
      try Command.parse(["child-pg-subscriber", "--postgres", "postgresql://h/db"])
    }
  }
}

/// `sessionbench --instructions`: which scenarios it counts, and the loops it runs under
/// callgrind (run here without valgrind, which CI does not install: the counts are for
/// people comparing builds, never asserted).
struct InstructionCountTests {
  @Test func theFlagCountsWritesReadsAndPagesAndRefusesOtherScenarios() throws {
    #expect(
      try Command.parse(["--instructions"])
        == .instructions(scenarios: ["write-normal", "write-normal-100", "read", "history", "open"]))
    #expect(try Command.parse(["--instructions", "read"]) == .instructions(scenarios: ["read"]))
    #expect(throws: (any Error).self) { try Command.parse(["--instructions", "idle"]) }
  }

  @Test(arguments: ["write-normal", "write-normal-100", "read", "history"], ["ours", "raw"])
  func eachLoopRuns(_ scenario: String, _ side: String) throws {
    let dir = try TemporaryDirectory()
    try InstructionCount.loop(scenario: scenario, side: side, count: 10, path: dir.file("s.db"))
    #expect(FileManager.default.fileExists(atPath: dir.file("s.db")))
  }
}
