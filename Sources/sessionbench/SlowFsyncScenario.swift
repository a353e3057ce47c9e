import Foundation
import SessionStorage
import Synchronization

/// `deliver-slow-fsync`: an outside writer (Python's sqlite3, `synchronous=FULL`) whose
/// every `fsync` is delayed by 150 ms with `strace -e inject=…:delay_exit=`. Its commit
/// becomes visible long after its last write to the WAL, which is the last file event.
/// Timed from the moment the writer's COMMIT returned (its `CLOCK_MONOTONIC`) until our
/// subscriber in this process has the entry. Baseline: a raw connection in this process
/// polling `PRAGMA data_version` every millisecond on the same file, the floor any
/// watcher can reach. Aim (edges issue): within 50 ms of becoming visible.
enum SlowFsyncScenario {
  static let fsyncDelayMicroseconds = 150_000

  /// The writer: one UPDATE per transaction, a pause of a second between them (so that
  /// no later write's file event can stand in for the missing one), and after each COMMIT
  /// the new cursor and the monotonic time it returned at.
  static let writer = """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    db.execute("PRAGMA synchronous = FULL")
    for i in range(int(sys.argv[2])):
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE session SET username = ?, is_logged_in = ?", ("slow-%d" % i, i % 2))
        seq = db.execute("SELECT max(seq) FROM session_changes").fetchone()[0]
        db.execute("COMMIT")
        print(seq, time.monotonic_ns(), flush=True)
        time.sleep(1.0)
    """

  static func run(scale: Scale) throws -> Outcome {
    let name = "deliver-slow-fsync"
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
      return Outcome(verdicts: [
        Verdict(
          scenario: name, aim: "within 50 ms of visible", measured: "skipped: strace is not installed",
          met: false)
      ])
    }
    let workspace = try Workspace(name)
    let store = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    try store.blocking.logIn(as: "start")

    let ours = Mutex<[Int64: UInt64]>([:])
    let changes = try store.changes(from: .now)
    let subscriber = Task {
      for try await entry in changes { ours.withLock { $0[entry.cursor.value] = Monotonic.now() } }
    }
    defer { subscriber.cancel() }

    let raw = Mutex<[Int64: UInt64]>([:])
    let stopped = Mutex(false)
    let pollerDone = DispatchSemaphore(value: 0)
    let path = workspace.ours
    Thread.detachNewThread {
      defer { pollerDone.signal() }
      // A poller that cannot open reports nothing, and the scenario then fails on it.
      guard let poller = try? RawDB(path: path, readOnly: true) else { return }
      var version = (try? poller.integer("PRAGMA data_version")) ?? 0
      while !stopped.withLock({ $0 }) {
        usleep(1000)
        guard let now = try? poller.integer("PRAGMA data_version"), now != version else { continue }
        version = now
        let arrived = Monotonic.now()
        if let head = try? poller.head() { raw.withLock { $0[head] = arrived } }
      }
    }
    defer {
      stopped.withLock { $0 = true }
      pollerDone.wait()
    }

    let writes = scale.quick ? 3 : 30
    let python = Process()
    python.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
    python.arguments = [
      "-f", "-qq", "-o", "/dev/null", "-e", "inject=fsync,fdatasync:delay_exit=\(fsyncDelayMicroseconds)",
      "python3", "-c", writer, workspace.ours, String(writes),
    ]
    let output = Pipe()
    python.standardOutput = output
    let started = Monotonic.now()
    try python.run()
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    python.waitUntilExit()
    let elapsed = Monotonic.now() - started
    guard python.terminationStatus == 0 else { throw BenchError("the slow writer failed") }
    let commits = printed.split(separator: "\n").compactMap { line -> (Int64, UInt64)? in
      let fields = line.split(separator: " ")
      guard fields.count == 2, let cursor = Int64(fields[0]), let time = UInt64(fields[1]) else { return nil }
      return (cursor, time)
    }
    guard commits.count == writes, let last = commits.last?.0 else {
      throw BenchError("the slow writer reported \(commits.count) of \(writes) commits")
    }
    // Both sides have everything (the safety poll bounds this at about a second).
    let deadline = Monotonic.now() + 10_000_000_000
    while ours.withLock({ $0[last] }) == nil || raw.withLock({ $0[last] }) == nil {
      guard Monotonic.now() < deadline else { throw BenchError("a side never saw cursor \(last)") }
      usleep(1000)
    }
    func sample(_ arrivals: borrowing Mutex<[Int64: UInt64]>) -> Sample {
      let seen = arrivals.withLock { $0 }
      var sample = Sample(operations: commits.count, elapsed: elapsed)
      // A commit can be seen before COMMIT returns to the writer: count that as no delay.
      sample.latencies = commits.compactMap { cursor, committed in
        seen[cursor].map { $0 > committed ? $0 - committed : 0 }
      }
      return sample
    }
    let oursSample = sample(ours)
    let rawSample = sample(raw)
    guard oursSample.latencies.count == writes else {
      throw BenchError("our subscriber saw \(oursSample.latencies.count) of \(writes) commits")
    }
    return Outcome(
      measurements: Measurement.latency(name, ours: oursSample, baseline: rawSample),
      verdicts: [
        Verdict(
          scenario: name, aim: "within 50 ms of visible (fsync 150 ms)",
          measured: String(
            format: "p50 %.1f ms, p99 %.1f ms (raw 1 ms poll: p50 %.1f ms, p99 %.1f ms)",
            oursSample.p50 / 1000,
            oursSample.p99 / 1000, rawSample.p50 / 1000, rawSample.p99 / 1000),
          met: oursSample.p99 < rawSample.p99 + 50_000)
      ])
  }
}
