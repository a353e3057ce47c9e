import FeedKit
import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// The steps another process takes: the sqlite3 shell, Python, sessionctl, the driver's own
/// writer and subscriber processes (killed, failing their fsyncs, staying alive), each
/// checked against the model.
extension ChaosWorld {
  // MARK: Processes

  /// Starts a process the hang limit kills if the driver gives up.
  static func spawn(
    _ executable: String, _ arguments: [String], stdin: ChildProcess.Input = .null,
    stderr: ChildProcess.Output = .inherit
  ) throws -> ChildProcess {
    let child = try ChildProcess(executable, arguments, stdin: stdin, stderr: stderr)
    ChaosWatchdog.shared.track(child.pid)
    return child
  }

  /// Starts this program again with a child command (``Children``), as ``spawn(_:_:stdin:stderr:)`` does.
  static func spawnChild(
    _ arguments: [String], stdin: ChildProcess.Input = .null, stderr: ChildProcess.Output = .inherit
  ) throws -> ChildProcess {
    try spawn(ChildProcess.currentExecutable, arguments, stdin: stdin, stderr: stderr)
  }

  /// Waits for a process of ``spawn(_:_:stdin:stderr:)`` to end; its status.
  @discardableResult
  static func reap(_ child: ChildProcess) -> Int32 {
    let status = child.wait()
    ChaosWatchdog.shared.untrack(child.pid)
    return status
  }

  /// Runs the sqlite3 shell, a fresh process that comes and goes like any other client.
  static func sqlite3(_ path: String, _ sql: String) throws -> String {
    let shell = try spawn("/usr/bin/sqlite3", ["-bail", "-cmd", ".timeout 30000", path, sql])
    guard reap(shell) == 0 else { throw TortureFailure("sqlite3 failed on: \(sql)") }
    return shell.lines.joined(separator: "\n")
  }

  /// Reads a line of ``ChaosBackend/rowColumns``.
  static func row(_ line: Substring) -> ChaosEntry? {
    let fields = line.split(separator: "|", omittingEmptySubsequences: false)
    guard fields.count == 11, let cursor = Int64(fields[0]), let time = milliseconds(fields[1]),
      let origin = quoted(fields[2]), let oldTime = milliseconds(fields[7]), let account = Int64(fields[8])
    else { return nil }
    return ChaosEntry(
      cursor: cursor, origin: origin ?? "NULL", account: account,
      before: ChaosState(
        username: quoted(fields[3]) ?? nil, isLoggedIn: fields[5] == "1", updatedAt: oldTime),
      after: ChaosState(username: quoted(fields[4]) ?? nil, isLoggedIn: fields[6] == "1", updatedAt: time),
      wasActive: fields[9] == "1", isActive: fields[10] == "1")
  }

  /// A time as the file stores it, in ms.
  static func milliseconds(_ text: Substring) -> Int64? {
    Timestamp.parse(String(text)).map(ChaosClock.milliseconds)
  }

  /// An SQL literal as `quote()` prints it: `.some(nil)` for NULL, nil for anything else.
  static func quoted(_ text: Substring) -> String?? {
    if text == "NULL" { return .some(nil) }
    guard text.count >= 2, text.first == "'", text.last == "'" else { return nil }
    return .some(text.dropFirst().dropLast().replacingOccurrences(of: "''", with: "'"))
  }

  /// The store's head and its rows after the model's head, read by a fresh process.
  func newRows() throws -> (head: Int64, rows: [ChaosEntry]) {
    let lines = try backend.shell(
      path,
      [
        backend.headSQL,
        "SELECT \(backend.rowColumns) FROM session_changes WHERE seq > \(model.head) ORDER BY seq",
      ]
    ).split(separator: "\n")
    guard let head = lines.first.flatMap({ Int64($0) }) else { throw TortureFailure("no head in \(lines)") }
    return (
      head,
      try lines.dropFirst().map { line in
        guard let row = Self.row(line) else { throw TortureFailure("unreadable row '\(line)'") }
        return row
      }
    )
  }

  /// The entries `Children.write` makes, in order, from the model's roster, its names
  /// `names-STEP`: step `s` logs in as a new account (s % 4 == 0), signs the active one out
  /// or else logs in (s % 4 == 3, then removes the oldest inactive account once the roster
  /// holds more than half its limit), renames the active one otherwise (or adds the name,
  /// active, when none is); a step that changes nothing writes nothing. Times are left
  /// unknown.
  func childWrites(_ count: Int, origin: String, names: String) -> [ChaosEntry] {
    var model = model
    var entries: [ChaosEntry] = []
    @discardableResult
    func take(_ action: ChaosStep.Action) -> Bool {
      guard let entry = model.predict(action, origin: origin).entry else { return false }
      model.commit(entry)
      entries.append(entry)
      return true
    }
    for step in 0..<count {
      let name = "\(names)-\(step)"
      switch step % 4 {
      case 0: take(.login(name))
      case 3:
        if !take(.logout) { take(.login(name)) }
        // The writer reads its roster every 64th step (Children.write).
        if step % 64 == 3, model.accounts.count > SessionRoster.limit / 2,
          let oldest = model.accounts.keys.sorted().first(where: { $0 != model.activeID }),
          let username = model.accounts[oldest]?.username
        {
          take(.remove(username))
        }
      default: take(.rename(name))
      }
    }
    return entries
  }

  /// Takes what another process wrote from the file: the rows after the model's head must
  /// be the first of `candidates`, at least `required` of them (those it acknowledged).
  /// Rows that retention deleted at once are taken with their time unknown.
  func adopt(
    _ candidates: [ChaosEntry], required: Int, window: ClosedRange<Int64>, ackedAt: UInt64, by writer: String
  ) throws {
    let (head, rows) = try newRows()
    let written = Int(head - model.head)
    guard written >= required, written <= candidates.count else {
      throw TortureFailure(
        "\(writer) acknowledged \(required) and could write \(candidates.count), but the head moved from "
          + "\(model.head) to \(head)")
    }
    let found = Dictionary(rows.map { ($0.cursor, $0) }) { first, _ in first }
    guard rows.allSatisfy({ $0.cursor <= head }), rows.count == found.count else {
      throw TortureFailure("\(writer): the rows after \(model.head) are \(rows.map(\.cursor))")
    }
    for candidate in candidates.prefix(written) {
      if let row = found[candidate.cursor] { model.learn(from: row) }
      var expected = model.rebased(candidate)
      if let row = found[candidate.cursor] {
        try Self.requireTime(row.after.updatedAt, within: window, of: writer)
        expected.setTime(row.after.updatedAt)
        if let difference = expected.difference(from: row) {
          throw TortureFailure("\(writer) wrote \(candidate.cursor) with \(difference)")
        }
      }
      commit(expected, window: window, at: ackedAt)
    }
    // The write after the last one in the file was perhaps issued: it may appear later.
    if written < candidates.count {
      issuedWithoutAcknowledgement(model.rebased(candidates[written]), window: window, by: writer)
    }
  }

  // MARK: Other clients' writes

  /// The statement an outside client makes for `action` (an UPDATE of the `session` view, or
  /// an edit of the roster's tables for what names an account), and the query that prints
  /// the row it wrote (none for a no-op).
  private func outsideSQL(_ action: ChaosStep.Action) -> (update: String, select: String) {
    let named = { (name: String) in "(SELECT id FROM accounts WHERE username = '\(name)')" }
    let statement: String
    switch action {
    case .login(let name):
      statement = "UPDATE session SET username = '\(name)', is_logged_in = \(backend.flag(true))"
    case .logout: statement = "UPDATE session SET is_logged_in = \(backend.flag(false))"
    case .rename(let name): statement = "UPDATE session SET username = '\(name)'"
    case .logoutOf(let name):
      statement = "UPDATE accounts SET is_logged_in = \(backend.flag(false)) WHERE username = '\(name)'"
    case .renameOf(let name, let newName):
      statement = "UPDATE accounts SET username = '\(newName)' WHERE username = '\(name)'"
    case .switchTo(let name):
      statement =
        "UPDATE active_account SET account_id = \(named(name)) WHERE id = 1 AND \(named(name)) IS NOT NULL"
    case .remove(let name): statement = "DELETE FROM accounts WHERE username = '\(name)'"
    case .logoutAll: preconditionFailure("the driver's outside clients edit one account at a time")
    }
    return (
      statement,
      "SELECT \(backend.rowColumns) FROM session_changes WHERE seq > \(model.head) ORDER BY seq"
    )
  }

  /// Checks what an outside client's transaction did against the model's prediction by the
  /// view's rules: the rows it printed (the ones it wrote), or, for a write the schema
  /// refuses, its failure (exit status and message) with nothing written. Then commits it.
  private func settleOutside(
    _ action: ChaosStep.Action, status: Int32, printed lines: [Substring], errors: String,
    window: ClosedRange<Int64>, ackedAt: UInt64, by writer: String
  ) throws {
    let predicted = model.predict(action, origin: "external", rules: .outside(action))
    if case .refused(let why) = predicted {
      let refusal = why == "UNIQUE" ? "UNIQUE constraint failed" : "1000 accounts"
      guard status != 0, errors.contains(refusal) || (backend.isPostgres && errors.contains("unique")) else {
        throw TortureFailure(
          "\(writer): \(action) exited with \(status) (\(errors.prefix(200))), the model expects a refusal "
            + "(\(why))")
      }
      let (head, rows) = try newRows()
      guard head == model.head, rows.isEmpty else {
        throw TortureFailure("\(writer): \(action) was refused and still moved the head to \(head)")
      }
      refused += 1
      return
    }
    guard status == 0 else {
      throw TortureFailure(
        "\(writer): \(action) failed (\(status): \(errors.prefix(200))), the model expects "
          + predicted.description)
    }
    let rows = try lines.map { line in
      guard let row = Self.row(line) else { throw TortureFailure("\(writer): unreadable row '\(line)'") }
      return row
    }
    guard let row = rows.first else {
      if let expected = predicted.entry {
        throw TortureFailure("\(writer): \(action) wrote no entry, the model expects \(expected.change)")
      }
      return
    }
    guard rows.count == 1, var expected = predicted.entry else {
      throw TortureFailure(
        "\(writer): \(action) wrote \(rows.map(\.change)), the model expects none (\(model.state))")
    }
    try Self.requireTime(row.after.updatedAt, within: window, of: "\(writer): \(action)")
    expected.setTime(row.after.updatedAt)
    if let difference = expected.difference(from: row) {
      throw TortureFailure("\(writer): \(action) wrote an entry with \(difference)")
    }
    commit(expected, window: window, at: ackedAt)
  }

  func shellWrite(_ action: ChaosStep.Action) throws {
    let (update, select) = outsideSQL(action)
    let start = ChaosClock.wallMilliseconds()
    let (status, output, errors) = try backend.shellStatus(path, [backend.begin, update, select, "COMMIT"])
    try settleOutside(
      action, status: status, printed: output.split(separator: "\n"), errors: errors,
      window: start...ChaosClock.wallMilliseconds(), ackedAt: Monotonic.now(),
      by: backend.isPostgres ? "psql" : "sqlite3 shell")
  }

  func pythonWrite(_ action: ChaosStep.Action, through prefix: [String] = ["/usr/bin/env"]) throws {
    let script = """
      import sqlite3, sys
      db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
      db.execute("BEGIN IMMEDIATE")
      db.execute(sys.argv[2])
      for row in db.execute(sys.argv[3]):
          print(row[0])
      db.execute("COMMIT")
      """
    let (update, select) = outsideSQL(action)
    let start = ChaosClock.wallMilliseconds()
    let errors = stderrPath
    let python = try Self.spawn(
      prefix[0], prefix.dropFirst() + ["python3", "-c", script, path, update, select], stderr: .file(errors))
    let status = Self.reap(python)
    try settleOutside(
      action, status: status, printed: python.lines.map { Substring($0) },
      errors: (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "",
      window: start...ChaosClock.wallMilliseconds(), ackedAt: Monotonic.now(), by: "python sqlite3")
  }

  /// What `sessionctl --json` prints for a write that changed nothing.
  private struct NoChange: Decodable {
    var type: String
    var cursor: Int64
    var state: SessionState
  }

  /// Runs sessionctl with `arguments` (after `--db PATH --json`): its exit status, output
  /// lines, and what it said on stderr.
  private func runSessionctlStatus(_ sessionctl: String, _ arguments: [String]) throws -> (
    status: Int32, lines: [String], errors: String
  ) {
    let errors = stderrPath
    let child = try Self.spawn(sessionctl, ["--db", path, "--json"] + arguments, stderr: .file(errors))
    let status = Self.reap(child)
    return (status, child.lines, (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
  }

  /// Runs sessionctl with `arguments` (after `--db PATH --json`); its output lines.
  private func runSessionctl(_ sessionctl: String, _ arguments: [String]) throws -> [String] {
    let (status, lines, errors) = try runSessionctlStatus(sessionctl, arguments)
    guard status == 0 else {
      throw TortureFailure(
        "sessionctl \(arguments.joined(separator: " ")) exited with \(status): \(errors.prefix(200))")
    }
    return lines
  }

  func sessionctlWrite(_ action: ChaosStep.Action) throws {
    guard let sessionctl else { return }
    let command: [String]
    switch action {
    case .login(let name): command = ["login", name]
    case .logout: command = ["logout"]
    case .rename(let name): command = ["rename", name]
    case .logoutOf(let name): command = ["logout", name]
    case .renameOf(let name, let newName): command = ["rename", "--account", name, newName]
    case .switchTo(let name): command = ["switch", name]
    case .remove(let name): command = ["remove", name]
    case .logoutAll: command = ["logout", "--all"]
    }
    let start = ChaosClock.wallMilliseconds()
    let (status, lines, errors) = try runSessionctlStatus(sessionctl, command)
    let (window, ackedAt) = (start...ChaosClock.wallMilliseconds(), Monotonic.now())
    if status != 0 {
      // A refusal of a name typed (taken, or no account has it): exit status 65 (invalid
      // input), one line on stderr saying why, nothing on stdout.
      guard status == 65, lines.isEmpty, errors.split(separator: "\n").count == 1, errors.contains("named '")
      else {
        throw TortureFailure(
          "sessionctl \(action) exited with \(status), printed \(lines) and said '\(errors)'")
      }
      let code = errors.contains("no account is named '") ? "accountNotFound" : "usernameTaken"
      try settle(
        action, origin: "sessionctl", returned: nil, refused: "\(code): \(errors)", window: window,
        ackedAt: ackedAt, by: "sessionctl")
      let (head, rows) = try newRows()
      guard head == model.head, rows.isEmpty else {
        throw TortureFailure("sessionctl \(action) was refused and still moved the head to \(head)")
      }
      return
    }
    if let line = lines.first, lines.count == 1,
      let noChange = try? JSONDecoder().decode(NoChange.self, from: Data(line.utf8)),
      noChange.type == "noChange"
    {
      if case .logoutAll = action {
        try settle(
          signingOutEveryone: [], origin: "sessionctl", window: window, ackedAt: ackedAt, by: "sessionctl")
      } else {
        try settle(
          action, origin: "sessionctl", returned: nil, window: window, ackedAt: ackedAt, by: "sessionctl")
      }
      guard noChange.cursor == model.head, ChaosState(noChange.state) == model.state else {
        throw TortureFailure(
          "sessionctl \(action): no change at \(noChange.cursor) in \(ChaosState(noChange.state)), the model is at "
            + "\(model.head) in \(model.state)")
      }
      return
    }
    let entries = try lines.map { line in
      guard let entry = try? JSONDecoder().decode(SessionEntry.self, from: Data(line.utf8)) else {
        throw TortureFailure("sessionctl \(action) printed '\(line)'")
      }
      return entry
    }
    if case .logoutAll = action {
      try settle(
        signingOutEveryone: entries, origin: "sessionctl", window: window, ackedAt: ackedAt, by: "sessionctl")
      return
    }
    guard entries.count == 1 else { throw TortureFailure("sessionctl \(action) printed \(lines)") }
    try settle(
      action, origin: "sessionctl", returned: entries[0], window: window, ackedAt: ackedAt, by: "sessionctl")
  }

  /// What `sessionctl retention --json` prints: the policy, then what applying it deleted.
  private struct RetentionLine: Decodable {
    var type: String
    var keepLast: Int?
    var maxAge: String?
  }

  private struct CompactionLine: Decodable {
    var type: String
    var removed: Int
    var oldest: Int64?
    var head: Int64
  }

  func sessionctlRetention(_ change: ChaosPolicy) throws {
    guard let sessionctl else { return }
    var arguments = ["retention"]
    var policy = model.policy
    if change == .off {
      arguments.append("--off")
      policy = .off
    } else {
      if let keep = change.keepLast {
        arguments += ["--keep", String(keep)]
        policy.keepLast = keep
      }
      if let age = change.maxAgeMilliseconds {
        arguments += ["--max-age", "\(age / 1000)s"]
        policy.maxAgeMilliseconds = age
      }
    }
    let start = ChaosClock.wallMilliseconds()
    let lines = try runSessionctl(sessionctl, arguments)
    let window = start...ChaosClock.wallMilliseconds()
    let decoder = JSONDecoder()
    guard lines.count == 2,
      let stored = try? decoder.decode(RetentionLine.self, from: Data(lines[0].utf8)),
      let applied = try? decoder.decode(CompactionLine.self, from: Data(lines[1].utf8)),
      stored.type == "retention", applied.type == "compaction"
    else { throw TortureFailure("sessionctl \(arguments.joined(separator: " ")) printed \(lines)") }
    let expectedAge = policy.maxAgeMilliseconds.map { Retention.format(.milliseconds($0)) }
    guard stored.keepLast == policy.keepLast, stored.maxAge == expectedAge else {
      throw TortureFailure(
        "sessionctl \(arguments.joined(separator: " ")) stored \(lines[0]), the model expects \(policy)")
    }
    let oldest = applied.oldest ?? (applied.head + 1)
    try applyRetention(
      CompactionResult(
        removed: applied.removed,
        bounds: FeedBounds(oldest: applied.oldest.map(Cursor.init), head: Cursor(applied.head))),
      policy: policy, window: window, by: "sessionctl \(arguments.joined(separator: " ")) (oldest \(oldest))")
  }

  // MARK: The driver's own processes

  func startChildSubscriber() throws {
    guard followers.filter(\.isProcess).count < 2 else { return }
    let child = try Self.spawnChild([
      "subscribe", "--db", path, "--count", "0", "--detail", "--safety-poll",
      String(Double(Self.safetyPoll.milliseconds) / 1000),
    ])
    guard let ready = try? child.awaitReady(), let cursor = Int64(ready) else {
      child.kill(SIGKILL)
      Self.reap(child)
      throw TortureFailure("a subscriber process did not start")
    }
    guard cursor == model.head else {
      throw TortureFailure("a subscriber process starts after \(cursor), the model's head is \(model.head)")
    }
    followers.append(
      ChaosFollower(
        nextFollower(), kind: .process, source: .process(child), start: cursor, serial: nil, time: nil))
  }

  func stopChildSubscriber(_ index: Int) throws {
    let processes = followers.filter(\.isProcess)
    guard !processes.isEmpty else { return }
    let follower = processes[index % processes.count]
    let problems = follower.verify(&model, bound: bound)
    guard problems.isEmpty else { throw TortureFailure(problems.joined(separator: "; ")) }
    if case .process(let child) = follower.source {
      child.kill(SIGTERM)
      Self.reap(child)
    }
    followers.removeAll { $0 === follower }
    retire(follower)
  }

  func snapshotsUnderLoad(_ index: Int, writes: Int) throws {
    guard let store = instance(index) else { return }
    let names = freshName("load")
    let candidates = childWrites(writes, origin: "load", names: names)
    let start = ChaosClock.wallMilliseconds()
    let child = try Self.spawnChild(
      ["write", "--db", path, "--count", String(writes), "--origin", "load", "--names", names])
    var snapshots: [SessionSnapshot] = []
    while child.status(within: .zero) == nil, snapshots.count < 20_000 {
      snapshots.append(try store.snapshot())
    }
    guard Self.reap(child) == 0 else { throw TortureFailure("the writer process failed") }
    let printed = child.lines.compactMap(Int64.init)
    guard printed == candidates.map(\.cursor) else {
      throw TortureFailure(
        "the writer acknowledged \(printed), the model expects \(candidates.map(\.cursor))")
    }
    try adopt(
      candidates, required: candidates.count, window: start...ChaosClock.wallMilliseconds(),
      ackedAt: Monotonic.now(), by: "the writer process")
    var previous: Int64 = 0
    for snapshot in snapshots {
      let (cursor, state) = (snapshot.cursor.value, ChaosState(snapshot.state))
      guard cursor >= previous else {
        throw TortureFailure("a snapshot at \(cursor) came after one at \(previous)")
      }
      previous = cursor
      guard let expected = model.state(at: cursor), expected.agrees(with: state) else {
        throw TortureFailure(
          "a snapshot under load holds \(state) at cursor \(cursor), where the model's state is "
            + (model.state(at: cursor)?.description ?? "unknown") + " (one of \(snapshots.count))")
      }
    }
  }
}
