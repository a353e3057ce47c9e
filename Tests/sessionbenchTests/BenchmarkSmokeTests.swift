import Foundation
import TestSupport
import Testing

/// `sessionbench --quick` runs every scenario end to end and writes well-formed JSON. No
/// figure is judged here (nor by the quick run itself): speed is measured by the benchmark,
/// never asserted by a test.
@Suite(.timeLimit(.minutes(20))) struct BenchmarkSmokeTests {
  @Test func quickRunCoversEveryScenarioWithWellFormedFigures() async throws {
    let dir = try TemporaryDirectory()
    let json = dir.file("figures.json")
    let result = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"), ["--quick", "--json", json], environment: ["TMPDIR": dir.path],
      timeout: .seconds(900))
    #expect(result.status == 0, "\(result.stderr)")
    let data = try #require(fileBytes(json))
    let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    let scenarios = Set(rows.compactMap { $0["scenario"] as? String })
    for name in [
      "write-normal", "write-normal-100", "write-normal-1000", "write-full", "read", "deliver-local",
      "deliver-local-100", "deliver-local-1000", "deliver-remote", "deliver-remote-100",
      "deliver-remote-1000",
      "deliver-external", "fanout", "fanout-1000-local", "fanout-100-remote", "fanout-100-watch",
      "deliver-slow-fsync", "idle",
      "open", "history", "cli-status", "cli-login", "cli-history", "cli-accounts", "cli-accounts-100",
      "cli-accounts-1000", "mem-subscriptions", "mem-watcher", "mem-idle-subscriber",
    ] {
      #expect(scenarios.contains(name), "\(name) is missing")
    }
    // A full run has the PostgreSQL scenarios when it finds a server (here a throwaway one,
    // when PostgreSQL is installed); otherwise it says why it skipped them.
    for name in [
      "pg-write", "pg-write-100", "pg-read", "pg-read-100", "pg-deliver-remote", "pg-deliver-remote-100",
    ] {
      #expect(
        scenarios.contains(name) || result.stderr.contains("\(name) skipped: no PostgreSQL server"),
        "\(name) is missing: \(result.stderr)")
    }
    let metrics: Set<String> = [
      "ops_per_s", "p50_us", "p90_us", "p99_us", "cpu_percent", "bytes_per_change", "peak_rss_kib",
      "rss_start_kib", "rss_tenth_kib", "rss_end_kib", "rss_growth_kib", "kib_per_subscription",
    ]
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

  /// The `pg-*` scenarios against the shared test server (`--postgres`): every figure with its
  /// raw-libpq baseline, and the schemas each scenario made are dropped afterwards.
  @Test func postgresScenariosRunAgainstAGivenServerAndDropTheirSchemas() async throws {
    let cluster = try await PostgresCluster.shared()
    let dir = try TemporaryDirectory()
    let json = dir.file("figures.json")
    let names = [
      "pg-write", "pg-write-100", "pg-read", "pg-read-100", "pg-deliver-remote", "pg-deliver-remote-100",
    ]
    let result = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"),
      ["--quick", "--postgres", cluster.clientURL(), "--json", json] + names,
      environment: ["TMPDIR": dir.path], timeout: .seconds(600))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(!result.stderr.contains("throwaway"), "it must use the given server: \(result.stderr)")
    let data = try #require(fileBytes(json))
    let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    let figures = Set(rows.map { "\($0["scenario"] ?? "") \($0["metric"] ?? "")" })
    #expect(figures == Set(names.flatMap { ["\($0) ops_per_s", "\($0) p50_us", "\($0) p99_us"] }), "\(rows)")
    for row in rows {
      #expect((row["ours"] as? Double)?.isFinite == true, "\(row)")
      #expect((row["baseline"] as? Double)?.isFinite == true, "\(row)")
    }
    let left = try await cluster.psql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sessionbench%'")
    #expect(left.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "schemas left behind: \(left)")
  }

  /// Without a usable server a `pg-*` scenario that was asked for fails with an error that
  /// says how to give one (no crash, no password printed).
  @Test(arguments: [
    ("mysql://localhost/db", "is not a PostgreSQL URL"),
    (
      "postgresql://postgres:hunter2@127.0.0.1:1/postgres",
      "cannot connect to postgresql://postgres:***@127.0.0.1:1"
    ),
  ])
  func postgresScenarioWithoutAServerFailsClearly(url: String, message: String) async throws {
    let dir = try TemporaryDirectory()
    let result = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"), ["--quick", "pg-read"],
      environment: ["TMPDIR": dir.path, "SESSIONBENCH_POSTGRES_URL": url], timeout: .seconds(300))
    #expect(result.status == 1, "\(result.stderr)")
    #expect(result.stderr.contains("pg-read failed: "), "\(result.stderr)")
    #expect(result.stderr.contains(message), "\(result.stderr)")
    #expect(!result.stderr.contains("hunter2"), "\(result.stderr)")
  }
}
