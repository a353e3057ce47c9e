import SessionStorage

/// `idle`: the CPU time a subscriber process uses while nothing is written, ours
/// (`child-subscriber`) beside the raw watcher (`child-raw-watcher`, whose only timer is
/// its 1 s safety re-check), both running at the same time on files of their own.
enum IdleScenario {
  static func run(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("idle")
    try workspace.createRawSchema()
    _ = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    let ours = try BenchChild(["child-subscriber", "--db", workspace.ours], arrivals: nil)
    defer { ours.finish() }
    let raw = try BenchChild(["child-raw-watcher", "--db", workspace.raw], arrivals: nil)
    defer { raw.finish() }
    try ours.waitUntilReady()
    try raw.waitUntilReady()
    Monotonic.sleep(nanoseconds: 500_000_000)
    let start = Monotonic.now()
    let (oursBefore, rawBefore) = (try ours.cpuTime(), try raw.cpuTime())
    Monotonic.sleep(nanoseconds: UInt64(scale.idleSeconds * 1e9))
    let (oursAfter, rawAfter) = (try ours.cpuTime(), try raw.cpuTime())
    let wall = Double(Monotonic.now() - start)
    let oursPercent = Double(oursAfter - oursBefore) / wall * 100
    let rawPercent = Double(rawAfter - rawBefore) / wall * 100
    return Outcome(
      measurements: [
        Measurement(scenario: "idle", metric: .cpuPercent, ours: oursPercent, baseline: rawPercent)
      ],
      verdicts: [
        Verdict(
          scenario: "idle", aim: "cpu < 0.1% of a core", measured: String(format: "%.4f%%", oursPercent),
          met: oursPercent < 0.1)
      ])
  }
}
