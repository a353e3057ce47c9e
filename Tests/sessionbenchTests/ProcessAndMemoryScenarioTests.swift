import Foundation
import TestSupport
import Testing

@testable import sessionbench

/// The `cli-*` and `mem-*` scenarios: they run, report every figure, and their memory
/// figures are those of the process they claim to measure. No time is asserted; memory
/// figures only where a wrong measurement cannot pass (sessionbench's own size reported for
/// a child, the wrong process read, a figure that did not move).
/// Whether GNU time is installed (CI installs it): without it the cli-* scenarios report
/// no peak memory, and say why.
private let hasGNUTime = FileManager.default.isExecutableFile(atPath: PeakMemory.time)

@Suite(.timeLimit(.minutes(20))) struct ProcessAndMemoryScenarioTests {
  static let names = [
    "cli-status", "cli-login", "cli-history", "cli-accounts-100", "mem-subscriptions", "mem-watcher",
    "mem-idle-subscriber",
  ]

  @Test func quickRunReportsEveryFigureOfTheNewScenarios() async throws {
    let dir = try TemporaryDirectory()
    let json = dir.file("figures.json")
    let result = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"), ["--quick", "--json", json] + Self.names,
      environment: ["TMPDIR": dir.path], timeout: .seconds(900))
    #expect(result.status == 0, "\(result.stderr)")
    let data = try #require(fileBytes(json))
    let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    var figures: [String: (ours: Double, baseline: Double?)] = [:]
    for row in rows {
      let key = "\(row["scenario"] as? String ?? "?") \(row["metric"] as? String ?? "?")"
      let ours = try #require(row["ours"] as? Double, "\(row)")
      #expect(ours.isFinite && ours >= 0, "\(row)")
      figures[key] = (ours, row["baseline"] as? Double)
    }

    // Every figure, with the sqlite3 shell or the raw watcher beside ours where there is one.
    var expected: [String: Bool] = [:]  // figure: has a baseline
    for name in ["cli-status", "cli-login", "cli-history", "cli-accounts-100"] {
      expected["\(name) p50_us"] = true
      expected["\(name) p90_us"] = true
      if hasGNUTime { expected["\(name) peak_rss_kib"] = true }
    }
    for metric in ["rss_start_kib", "rss_end_kib", "kib_per_subscription"] {
      expected["mem-subscriptions \(metric)"] = false
    }
    for metric in ["rss_start_kib", "rss_tenth_kib", "rss_end_kib", "rss_growth_kib", "peak_rss_kib"] {
      expected["mem-watcher \(metric)"] = true
      expected["mem-idle-subscriber \(metric)"] = false
    }
    #expect(Set(figures.keys) == Set(expected.keys), "\(rows)")
    for (key, hasBaseline) in expected {
      #expect((figures[key]?.baseline != nil) == hasBaseline, "\(key): \(String(describing: figures[key]))")
    }
    if !hasGNUTime {
      #expect(
        result.stderr.contains("peak memory not measured: /usr/bin/time is not installed"), "\(result.stderr)"
      )
    }

    // Peak memory is the measured process's: the sqlite3 shell is a few MiB, where a child
    // of sessionbench measured with wait4 starts at sessionbench's own high-water mark.
    for name in ["cli-status", "cli-login", "cli-history", "cli-accounts-100"] where hasGNUTime {
      let shell = try #require(figures["\(name) peak_rss_kib"]?.baseline)
      #expect(shell >= 1024 && shell < 16_384, "\(name): sqlite3's peak RSS \(shell) KiB")
    }
    // Resident sets read from the child at one moment: the peak is at least the current one,
    // and the growth is the difference of the two it names.
    for name in ["mem-watcher", "mem-idle-subscriber"] {
      let end = try #require(figures["\(name) rss_end_kib"])
      let tenth = try #require(figures["\(name) rss_tenth_kib"])
      let peak = try #require(figures["\(name) peak_rss_kib"])
      #expect(try #require(figures["\(name) rss_start_kib"]).ours >= 1024)
      #expect(peak.ours >= end.ours)
      #expect(figures["\(name) rss_growth_kib"]?.ours == end.ours - tenth.ours)
      if let rawPeak = peak.baseline, let rawEnd = end.baseline { #expect(rawPeak >= rawEnd) }
    }
    // 200 subscriptions, each a task, an iterator and a registration, cost more than 1 KiB
    // each: a reading of a process that does not hold them shows next to no growth.
    let perSubscription = try #require(figures["mem-subscriptions kib_per_subscription"]).ours
    #expect(perSubscription >= 1, "\(perSubscription) KiB per subscription")

    for name in Self.names { #expect(result.stdout.contains("\n\(name) "), "\(name): \(result.stdout)") }
    #expect(result.stdout.contains("\naims: not judged (quick run)\n"), "\(result.stdout)")
  }

  /// GNU time reports the process it runs, not sessionbench's (here the test process's)
  /// high-water mark: this process first touches 64 MiB, which `wait4`'s `ru_maxrss` of any
  /// child it starts would report.
  @Test(.enabled(if: hasGNUTime || ProcessInfo.processInfo.environment["CI"] != nil))
  func peakMemoryIsThatOfTheMeasuredProcess() async throws {
    let sqlite3 = try #require(ProcessScenario.sqlite3(), "the sqlite3 shell is not installed")
    let ballast = [UInt8](repeating: 1, count: 64 << 20)
    let meter = try #require(PeakMemory(), "GNU time is not installed (apt-get install -y time)")
    let (small, big) = try await offThePool {
      let workspace = try Workspace("peak-memory-test")
      let environment = ProcessScenario.childEnvironment(workspace)
      func shell(_ sql: String, _ expected: String) -> ProcessScenario.Invocation {
        ProcessScenario.Invocation(
          program: sqlite3, arguments: ["-batch", ":memory:", sql], expected: expected)
      }
      return (
        try meter.measure(shell("SELECT 1;", "1"), workspace, environment),
        try meter.measure(shell("SELECT length(randomblob(67108864));", "67108864"), workspace, environment)
      )
    }
    #expect(small >= 512 && small < 16_384, "sqlite3 SELECT 1: \(small) KiB")
    #expect(big - small >= 60_000, "a 64 MiB blob: \(big) KiB, against \(small) KiB")
    #expect(ballast.count == 64 << 20)
  }

  /// `ResidentSet.of(pid)` reads the process it is given: a child holding 64 MiB shows them,
  /// one holding nothing does not.
  @Test func residentSetIsThatOfTheGivenProcess() async throws {
    let sets = try await offThePool {
      try [0, 64].map { mebibytes in
        let python = try BenchChild(
          program: "/usr/bin/python3",
          [
            "-c",
            "import sys\nb = b'x' * (\(mebibytes) << 20)\nprint('ready', flush=True)\nsys.stdin.read()",
          ], environment: ["PATH": "/usr/bin:/bin"])
        defer { python.finish() }
        try python.waitUntilReady()
        return try ResidentSet.of(python.pid)
      }
    }
    for set in sets { #expect(set.peak >= set.current, "\(set)") }
    #expect(sets[1].current - sets[0].current >= 60_000, "\(sets)")
    #expect(sets[0].current < 40_000, "\(sets)")
    #expect(throws: BenchError.self) { try ResidentSet.of(-1) }
  }

  /// Without a sessionctl beside it, a cli-* scenario fails and says how to build one or
  /// name one; a `--sessionctl` that is not a program is refused by name.
  @Test func aMissingSessionctlSaysHowToBuildOne() async throws {
    let dir = try TemporaryDirectory()
    let copy = dir.file("sessionbench")
    // Copied by another process: a file this process held open for writing could be
    // inherited by a child another test spawns meanwhile, and starting it would fail with
    // ETXTBSY.
    let copied = try await ProcessRunner.runDetached(
      "/bin/cp", [ProcessRunner.product("sessionbench"), copy])
    try #require(copied.status == 0, "\(copied.stderr)")
    let alone = try await ProcessRunner.runDetached(
      copy, ["--quick", "cli-status"], environment: ["TMPDIR": dir.path], timeout: .seconds(300))
    #expect(alone.status == 1, "\(alone.stderr)")
    #expect(
      alone.stderr.contains(
        "cli-status failed: no sessionctl beside sessionbench (\(dir.file("sessionctl")))"))
    #expect(alone.stderr.contains("swift build -c release --product sessionctl"), "\(alone.stderr)")
    #expect(alone.stderr.contains("--sessionctl PATH"), "\(alone.stderr)")

    let wrong = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionbench"), ["--quick", "--sessionctl", dir.file("none"), "cli-login"],
      environment: ["TMPDIR": dir.path], timeout: .seconds(300))
    #expect(wrong.status == 1, "\(wrong.stderr)")
    #expect(
      wrong.stderr.contains("cli-login failed: --sessionctl \(dir.file("none")): no executable program there")
    )
  }

  @Test func theOptionAndTheChildAreParsed() throws {
    #expect(
      try Command.parse(["--sessionctl", "/opt/sessionctl", "cli-status"])
        == .bench(
          quick: false, json: nil, scenarios: ["cli-status"], postgres: nil, named: true,
          sessionctl: "/opt/sessionctl"))
    #expect(try Command.parse(["child-holder", "--db", "/tmp/s.db"]) == .childHolder(path: "/tmp/s.db"))
    for name in Self.names { #expect(Scenarios.names.contains(name)) }
    #expect(ProcessScenario.sqlite3(path: "/nonexistent:") == nil)
  }

  /// The verdict says what could not be measured, and then the aim is not met.
  @Test func aVerdictWithoutAFigureSaysWhy() {
    let sample = Sample(latencies: [1_000_000, 2_000_000, 3_000_000])
    let noMemory = ProcessScenario.verdict(
      "cli-status", ours: sample, shell: sample, memory: nil, memoryProblem: PeakMemory.unavailable)
    #expect(!noMemory.met)
    #expect(noMemory.measured.hasPrefix("p50 1.00× (2.0 / 2.0 ms)"), "\(noMemory.measured)")
    #expect(
      noMemory.measured.contains(
        "peak RSS not measured: /usr/bin/time is not installed (apt-get install -y time)"))
    let noShell = ProcessScenario.verdict(
      "cli-status", ours: sample, shell: nil, memory: nil, memoryProblem: ProcessScenario.noShell)
    #expect(!noShell.met)
    #expect(noShell.measured.hasPrefix("skipped: no sqlite3 in PATH"))
    let both = ProcessScenario.verdict(
      "cli-status", ours: sample, shell: sample, memory: (ours: 6000, shell: 4000), memoryProblem: nil)
    #expect(both.met)
    #expect(both.measured.hasSuffix("peak RSS 1.50× (6000 / 4000 KiB)"), "\(both.measured)")
  }

  /// What the memory scenarios count: every entry, in order, or a failure the wait throws.
  @Test func deliveryCountCountsInOrderOrFails() throws {
    let count = DeliveryCount()
    for cursor in Int64(1)...3 { count.receive(cursor) }
    #expect(try count.wait(atLeast: 3, timeout: .seconds(1)) == 3)
    count.receive(5)
    let error = try #require(throws: BenchError.self) { try count.wait(atLeast: 4, timeout: .seconds(1)) }
    #expect(error.description == "received cursor 5 after 3")
  }
}

/// Runs `body` on a thread of its own, not on the cooperative pool (it blocks in `waitpid`).
private func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
  }
}
