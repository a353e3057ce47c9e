import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// `cli-status`, `cli-login`, `cli-history`, `cli-accounts` (with 2, 100 and 1,000 accounts
/// in the roster): what a user at a shell waits for. Each run is a
/// whole process, start to exit: the `sessionctl` program against a prepared store, beside
/// the `sqlite3` shell running the same SQL on a file prepared the same way. The two sides
/// alternate run by run (ours first in even runs, the shell first in odd ones); the figures
/// are the median and p90 wall time per side. Peak memory is measured in separate runs
/// under GNU time (see ``PeakMemory``).
enum ProcessScenario {
  static let names = [
    "cli-status", "cli-login", "cli-history", "cli-accounts", "cli-accounts-100", "cli-accounts-1000",
  ]

  /// The roster's size in each `cli-accounts` scenario.
  static let rosterSizes = ["cli-accounts": 2, "cli-accounts-100": 100, "cli-accounts-1000": 1_000]

  /// The aims: ours/sqlite3 at most this for the median wall time and the peak memory.
  static let wallAim = 2.0
  static let memoryAim = 1.5

  /// Changes in the log `cli-history` reads the newest page of.
  static let historyLog = 1_000
  static let historyLimit = 10

  /// One process to run: the program, its arguments, and a word its output must contain
  /// (so that a run that printed nothing, or the wrong thing, fails the scenario).
  struct Invocation {
    let program: String
    let arguments: [String]
    let expected: String
  }

  static func run(_ name: String, scale: Scale, sessionctl given: String?) throws -> Outcome {
    let sessionctl = try program(given)
    let workspace = try Workspace(name)
    let sqlite3 = Self.sqlite3()
    let prepared = try prepare(name, workspace)
    let environment = childEnvironment(workspace)
    // The n-th run of each side: cli-login alternates two users, so every run is a change.
    func ours(_ run: Int) -> Invocation { prepared.ours(sessionctl, run) }
    func shell(_ run: Int) -> Invocation? { sqlite3.map { prepared.shell($0, run) } }

    // Two untimed runs a side: the programs' pages are in the page cache for both.
    var (oursRun, shellRun) = (0, 0)
    for _ in 0..<2 {
      _ = try timed(ours(oursRun), workspace, environment)
      oursRun += 1
      if let invocation = shell(shellRun) {
        _ = try timed(invocation, workspace, environment)
        shellRun += 1
      }
    }
    var (oursWall, shellWall) = (Sample(), Sample())
    for round in 0..<scale.processRuns {
      let oursFirst = round.isMultiple(of: 2)
      if oursFirst {
        oursWall.latencies.append(try timed(ours(oursRun), workspace, environment))
        oursRun += 1
      }
      if let invocation = shell(shellRun) {
        shellWall.latencies.append(try timed(invocation, workspace, environment))
        shellRun += 1
      }
      if !oursFirst {
        oursWall.latencies.append(try timed(ours(oursRun), workspace, environment))
        oursRun += 1
      }
    }

    var memory: (ours: Int, shell: Int)?
    var memoryProblem: String?
    if let sqlite3, let meter = PeakMemory() {
      var (oursPeaks, shellPeaks) = ([Int](), [Int]())
      for round in 0..<scale.memoryRuns {
        let order = round.isMultiple(of: 2) ? [true, false] : [false, true]
        for isOurs in order {
          let invocation = isOurs ? ours(oursRun) : prepared.shell(sqlite3, shellRun)
          let peak = try meter.measure(invocation, workspace, environment)
          if isOurs {
            oursPeaks.append(peak)
            oursRun += 1
          } else {
            shellPeaks.append(peak)
            shellRun += 1
          }
        }
      }
      memory = (median(oursPeaks), median(shellPeaks))
    } else {
      memoryProblem = sqlite3 == nil ? Self.noShell : PeakMemory.unavailable
      SessionBench.warn("  \(name): peak memory not measured: \(memoryProblem ?? "")")
    }
    try prepared.verify(oursRun, shellRun)

    let shellSample = sqlite3 == nil ? nil : shellWall
    var measurements = [
      Measurement(scenario: name, metric: .p50, ours: oursWall.p50, baseline: shellSample?.p50),
      Measurement(
        scenario: name, metric: .p90, ours: oursWall.percentile(0.9), baseline: shellSample?.percentile(0.9)),
    ]
    if let memory {
      measurements.append(
        Measurement(
          scenario: name, metric: .peakRSS, ours: Double(memory.ours), baseline: Double(memory.shell)))
    }
    return Outcome(
      measurements: measurements,
      verdicts: [
        verdict(name, ours: oursWall, shell: shellSample, memory: memory, memoryProblem: memoryProblem)
      ])
  }

  /// The aim: median wall time ≤ 2× the shell's, peak memory ≤ 1.5× the shell's. A figure
  /// that could not be measured is said so, and the aim is not met.
  static func verdict(
    _ name: String, ours: Sample, shell: Sample?, memory: (ours: Int, shell: Int)?, memoryProblem: String?
  ) -> Verdict {
    let aim = String(format: "p50 ≤ %g×, peak RSS ≤ %g× sqlite3", wallAim, memoryAim)
    guard let shell else {
      return Verdict(scenario: name, aim: aim, measured: "skipped: \(noShell)", met: false)
    }
    let wall = ours.p50 / shell.p50
    var measured = String(format: "p50 %.2f× (%.1f / %.1f ms)", wall, ours.p50 / 1000, shell.p50 / 1000)
    var met = wall <= wallAim
    if let memory {
      let ratio = Double(memory.ours) / Double(memory.shell)
      measured += String(format: ", peak RSS %.2f× (%d / %d KiB)", ratio, memory.ours, memory.shell)
      met = met && ratio <= memoryAim
    } else {
      measured += ", peak RSS not measured: \(memoryProblem ?? "")"
      met = false
    }
    return Verdict(scenario: name, aim: aim, measured: measured, met: met)
  }

  static let noShell = "no sqlite3 in PATH (apt-get install -y sqlite3); the cli-* scenarios compare with it"

  /// There is no `sessionctl` beside sessionbench: a full run skips the `cli-*` scenarios
  /// and says why, one that names them fails.
  struct NoSessionctl: Error, CustomStringConvertible {
    let path: String

    var description: String {
      "no sessionctl beside sessionbench (\(path)): build it in the same configuration, e.g. "
        + "'swift build -c release --product sessionctl' (or plain 'swift build -c release'), or name one "
        + "with --sessionctl PATH"
    }
  }

  /// The `sessionctl` to run: `--sessionctl`, else the one in sessionbench's own directory
  /// (the same build).
  /// - Throws: ``NoSessionctl`` when there is none beside sessionbench, ``BenchError`` when
  ///   `given` is not a program.
  static func program(_ given: String?) throws -> String {
    if let given {
      guard FileManager.default.isExecutableFile(atPath: given) else {
        throw BenchError("--sessionctl \(given): no executable program there")
      }
      return given
    }
    let directory = URL(fileURLWithPath: ChildProcess.currentExecutable).deletingLastPathComponent()
    let beside = directory.appendingPathComponent("sessionctl").path
    guard FileManager.default.isExecutableFile(atPath: beside) else { throw NoSessionctl(path: beside) }
    return beside
  }

  /// The first `sqlite3` in this process's `PATH`, or nil.
  static func sqlite3(path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
    for directory in (path ?? "").split(separator: ":") where !directory.isEmpty {
      let candidate = "\(directory)/sqlite3"
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
  }

  /// What every measured process runs with, and nothing else: no `SESSIONCTL_DB` or
  /// `XDG_DATA_HOME` of ours can pick another file, and `HOME` is the scenario's directory
  /// (which holds no `~/.sqliterc` for the shell to read).
  static func childEnvironment(_ workspace: Workspace) -> [String: String] {
    ["PATH": "/usr/bin:/bin", "HOME": workspace.root, "TMPDIR": workspace.root, "LC_ALL": "C.UTF-8"]
  }

  /// Runs `invocation` once and returns its wall time in nanoseconds: from just before
  /// `posix_spawn` until `waitpid` has reaped it. Its output goes to files, checked after.
  static func timed(_ invocation: Invocation, _ workspace: Workspace, _ environment: [String: String])
    throws -> UInt64
  {
    let (stdout, stderr) = (workspace.root + "/stdout", workspace.root + "/stderr")
    let start = Monotonic.now()
    let child: ChildProcess
    do {
      child = try ChildProcess(
        invocation.program, invocation.arguments, environment: environment, stdin: .null,
        stdout: .file(stdout), stderr: .file(stderr))
    } catch {
      throw BenchError("\(error)")
    }
    let status = child.wait()
    let elapsed = Monotonic.now() - start
    try check(invocation, status: status, stdout: stdout, stderr: stderr)
    return elapsed
  }

  /// Throws unless the run exited 0 and printed what it should.
  static func check(_ invocation: Invocation, status: Int32, stdout: String, stderr: String) throws {
    let output = (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? ""
    guard status == 0, output.contains(invocation.expected) else {
      let errors = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
      throw BenchError(
        "\(([invocation.program] + invocation.arguments).joined(separator: " ")) exited with \(status) "
          + "and printed \(output.prefix(300).debugDescription), expected \(invocation.expected.debugDescription); "
          + "stderr: \(errors.prefix(500))")
    }
  }

  /// The middle value (the lower of the two middle ones for an even count).
  static func median(_ values: [Int]) -> Int {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[(sorted.count - 1) / 2]
  }

  // MARK: The prepared stores and what each side runs

  /// The two files of a scenario, prepared alike, and the command lines of its runs.
  struct Prepared {
    let ours: (String, Int) -> Invocation
    let shell: (String, Int) -> Invocation
    /// Checks after the runs that they did what they claim (the logins committed).
    let verify: (_ oursRuns: Int, _ shellRuns: Int) throws -> Void
  }

  /// Prepares both files: created by the store (its migrations), `bob` and then `alice` signed
  /// in (so `alice` is the active account, and each `cli-login` run switches to the other
  /// one), and for `cli-history` a log of 1,000 changes (the baseline's write, the store's
  /// statements); for `cli-accounts-100` and `-1000` the other accounts (``Roster``) join
  /// first. No connection of sessionbench stays open on them while the processes run.
  static func prepare(_ name: String, _ workspace: Workspace) throws -> Prepared {
    var heads: [String: Int64] = [:]
    for path in [workspace.ours, workspace.raw] {
      let store = try SessionStore(path: path, options: .init(origin: "sessionbench"))
      // user-002 … up to the roster's size, with bob and alice.
      try Roster.populate(store, accounts: (rosterSizes[name] ?? 2) - 1) { _ in true }
      try store.blocking.logIn(as: "bob")
      try store.blocking.logIn(as: "alice")
      if name == "cli-history" {
        let db = try RawDB(path: path, synchronous: "NORMAL")
        try HistoryScenario.fill(RawWriter(db: db, origin: "sessionbench"), count: historyLog, from: 1)
      }
      heads[path] = try store.bounds().head.value
    }
    let (oursFile, shellFile) = (workspace.ours, workspace.raw)
    let oursHead = heads[oursFile] ?? 0
    let shellHead = heads[shellFile] ?? 0
    // The shell's options: no prompt or banner, stop at the first error, the store's busy
    // timeout. The SQL is one argument, as a user would pass it.
    func shell(_ sqlite3: String, _ sql: String, expected: String) -> Invocation {
      Invocation(
        program: sqlite3, arguments: ["-batch", "-bail", "-cmd", ".timeout 5000", shellFile, sql],
        expected: expected)
    }
    switch name {
    case "cli-status":
      // What `sessionctl status` reads: the state and the head cursor, in one transaction.
      let sql =
        "BEGIN; SELECT username, is_logged_in, updated_at FROM session WHERE id = 1; "
        + "SELECT coalesce(max(seq), 0) FROM session_changes; COMMIT;"
      return Prepared(
        ours: { program, _ in
          Invocation(program: program, arguments: ["--db", oursFile, "status"], expected: "alice")
        },
        shell: { sqlite3, _ in shell(sqlite3, sql, expected: "alice|1|") },
        verify: { _, _ in })
    case "cli-login":
      // What `sessionctl login` commits in one transaction, typed into the shell: the reads
      // of its plan (the active account, the account named, the feed's head), the feed row,
      // the account's UPDATE, the move of active_account, and the read of the new row, which
      // it prints; `synchronous=FULL`, the store's default. The feed row goes in before the
      // UPDATEs, which take its cursor (keeping the triggers aside) and time, because the
      // shell has no variables to keep the values before the change in.
      func user(_ run: Int) -> String { run.isMultiple(of: 2) ? "bob" : "alice" }
      func sql(_ run: Int) -> String {
        let name = user(run)
        let row = "(SELECT %@ FROM session_changes WHERE seq = last_insert_rowid())"
        func newest(_ column: String) -> String { row.replacingOccurrences(of: "%@", with: column) }
        return "PRAGMA synchronous = FULL; BEGIN IMMEDIATE; "
          + "\(RawWriter.activeSQL); "
          + "\(RawWriter.namedSQL.replacingOccurrences(of: "?1", with: "'\(name)'")); "
          + "\(RawWriter.headSQL); "
          + "INSERT INTO session_changes (at, origin, account_id, old_username, new_username, old_is_logged_in, "
          + "new_is_logged_in, old_updated_at, was_active, is_active) SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
          + "'sqlite3', a.id, a.username, '\(name)', a.is_logged_in, 1, a.updated_at, a.id IS p.account_id, 1 "
          + "FROM accounts a JOIN active_account p ON p.id = 1 WHERE a.username = '\(name)' "
          + "AND (a.is_logged_in IS NOT 1 OR a.id IS NOT p.account_id); "
          + "UPDATE accounts SET is_logged_in = 1, updated_at = \(newest("at")), "
          + "seq = last_insert_rowid() WHERE username = '\(name)' AND seq < last_insert_rowid(); "
          + "UPDATE active_account SET account_id = \(newest("account_id")), updated_at = \(newest("at")), "
          + "seq = last_insert_rowid() "
          + "WHERE id = 1 AND account_id IS NOT \(newest("account_id")); "
          + "SELECT \(RawDB.changeColumns) FROM session_changes ORDER BY seq DESC LIMIT 1; COMMIT;"
      }
      return Prepared(
        ours: { program, run in
          Invocation(
            program: program, arguments: ["--db", oursFile, "login", user(run)], expected: user(run))
        },
        shell: { sqlite3, run in shell(sqlite3, sql(run), expected: "|\(user(run))|") },
        verify: { oursRuns, shellRuns in
          // Every run committed one change: the heads moved by the number of runs.
          for (file, head, runs) in [(oursFile, oursHead, oursRuns), (shellFile, shellHead, shellRuns)] {
            let now = try RawDB(path: file, readOnly: true).head()
            guard now == head + Int64(runs) else {
              throw BenchError("\(runs) logins on \(file) moved its head from \(head) to \(now)")
            }
          }
        })
    case _ where rosterSizes[name] != nil:
      // What `sessionctl accounts` reads, in one transaction: every account, the pointer
      // to the active one, the feed's head.
      let sql =
        "BEGIN; SELECT id, username, is_logged_in, updated_at, seq FROM accounts ORDER BY id; "
        + "SELECT account_id, updated_at FROM active_account WHERE id = 1; "
        + "SELECT seq FROM session_feed_head; COMMIT;"
      return Prepared(
        ours: { program, _ in
          Invocation(program: program, arguments: ["--db", oursFile, "accounts"], expected: "* alice")
        },
        shell: { sqlite3, _ in shell(sqlite3, sql, expected: "|alice|1|") },
        verify: { _, _ in
          for file in [oursFile, shellFile] {
            let size = try SessionStore(path: file, options: .init(readOnly: true)).roster().accounts.count
            guard size == rosterSizes[name] else {
              throw BenchError("\(name): the roster of \(file) holds \(size) accounts")
            }
          }
        })
    default:
      // `history --since (head − 10) --limit 10`: the newest ten changes, oldest first.
      // (Without --since, history starts at the oldest change kept.)
      let since = oursHead - Int64(historyLimit)
      let sql =
        "SELECT \(changeColumns) FROM session_changes WHERE seq > \(shellHead - Int64(historyLimit)) "
        + "ORDER BY seq LIMIT \(historyLimit);"
      return Prepared(
        ours: { program, _ in
          Invocation(
            program: program,
            arguments: [
              "--db", oursFile, "history", "--since", String(since), "--limit", String(historyLimit),
            ],
            expected: String(oursHead))
        },
        shell: { sqlite3, _ in shell(sqlite3, sql, expected: "\(shellHead)|") },
        verify: { _, _ in })
    }
  }

  /// The columns of a change row, as the store reads them.
  static let changeColumns = RawDB.changeColumns
}

/// The peak resident set of a whole process, measured by GNU time (`/usr/bin/time -f %M`).
///
/// Not `wait4`'s `ru_maxrss` of a child of sessionbench: on Linux a child made by `fork`,
/// `vfork` or `posix_spawn` starts as a copy of its parent, and `exec` records that copy's
/// high-water mark into the child's `maxrss` (`exec_mmap` saves the old mm's hiwater), so
/// every child of a 30 MiB parent reports at least 30 MiB. GNU time is a small process: the
/// child it forks inherits its own ~1 MiB, below anything measured here.
struct PeakMemory {
  static let time = "/usr/bin/time"
  static let unavailable = "/usr/bin/time is not installed (apt-get install -y time)"

  /// Nil when GNU time is not installed.
  init?() {
    guard FileManager.default.isExecutableFile(atPath: Self.time) else { return nil }
  }

  /// Runs `invocation` under `/usr/bin/time -f %M -o FILE` and returns its peak resident
  /// set in KiB. The figure goes to a file of its own, apart from the command's stderr.
  func measure(
    _ invocation: ProcessScenario.Invocation, _ workspace: Workspace, _ environment: [String: String]
  )
    throws -> Int
  {
    let report = workspace.root + "/peak-rss"
    let (stdout, stderr) = (workspace.root + "/stdout", workspace.root + "/stderr")
    let child: ChildProcess
    do {
      child = try ChildProcess(
        Self.time, ["-f", "%M", "-o", report, invocation.program] + invocation.arguments,
        environment: environment, stdin: .null, stdout: .file(stdout), stderr: .file(stderr))
    } catch {
      throw BenchError("\(error)")
    }
    let status = child.wait()
    try ProcessScenario.check(invocation, status: status, stdout: stdout, stderr: stderr)
    let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
    // GNU time writes the figure on the last line (a line before it says when the command
    // failed, which `check` has refused already).
    guard let line = text.split(separator: "\n").last,
      let kib = Int(line.trimmingCharacters(in: .whitespaces)),
      kib > 0
    else {
      throw BenchError("\(Self.time) reported \(text.debugDescription) for \(invocation.program)")
    }
    return kib
  }
}
