import Foundation
import TestSupport
import Testing

/// `sessionbench --quick` runs every scenario end to end and writes well-formed JSON. No
/// figure is judged here (nor by the quick run itself): speed is measured by the benchmark,
/// never asserted by a test.
@Suite(.timeLimit(.minutes(5))) struct BenchmarkSmokeTests {
  @Test func quickRunCoversEveryScenarioWithWellFormedFigures() async throws {
    let dir = try TemporaryDirectory()
    let json = dir.file("figures.json")
    let result = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"), ["--quick", "--json", json], environment: ["TMPDIR": dir.path],
      timeout: .seconds(240))
    #expect(result.status == 0, "\(result.stderr)")
    let data = try #require(fileBytes(json))
    let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    let scenarios = Set(rows.compactMap { $0["scenario"] as? String })
    for name in [
      "write-normal", "write-full", "read", "deliver-local", "deliver-remote", "deliver-external", "fanout",
      "deliver-slow-fsync", "idle",
      "history",
    ] {
      #expect(scenarios.contains(name), "\(name) is missing")
    }
    let metrics: Set<String> = ["ops_per_s", "p50_us", "p99_us", "cpu_percent", "bytes_per_change"]
    for row in rows {
      #expect(Set(row.keys) == ["scenario", "metric", "ours", "baseline"], "\(row)")
      #expect(metrics.contains(row["metric"] as? String ?? ""), "\(row)")
      let ours = try #require(row["ours"] as? Double, "\(row)")
      #expect(ours.isFinite && ours >= 0, "\(row)")
      #expect(row["baseline"] is NSNull || (row["baseline"] as? Double)?.isFinite == true, "\(row)")
    }
    #expect(result.stdout.contains("ours/raw") || result.stdout.contains("×"))
    // A quick run's figures are not to be quoted: it judges no aim on them.
    #expect(result.stdout.hasPrefix("scenario              metric        better "), "\(result.stdout)")
    #expect(result.stdout.contains("\naims: not judged (quick run)\n"), "\(result.stdout)")
    #expect(!result.stdout.contains("MISSED") && !result.stdout.contains("\nmet "), "\(result.stdout)")
  }
}
