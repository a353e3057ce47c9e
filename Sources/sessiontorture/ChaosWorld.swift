import FeedKit
import Foundation
import ProcessKit
import SessionStorage
import Synchronization

/// The chaos driver's world: store instances, subscribers and processes on one file, and
/// the model the checker holds — every acknowledged write and its cursor.
final class ChaosWorld {
  let path: String
  let sessionctl: String?
  private(set) var instances: [SessionStore] = []
  private var subscribers: [ChaosSubscriber] = []
  private var childSubscribers: [(child: ChildProcess, start: Int64)] = []
  /// Acknowledged cursors, with the state after them where the writer told it.
  private(set) var acknowledged: [Int64: ChaosState?] = [:]
  /// Cursors below this may have been compacted away.
  private(set) var compactedBelow: Int64 = 0
  /// Every row the checker has seen, by cursor.
  private var seen: [Int64: ChaosState] = [:]
  /// The file as the last check read it.
  private var head: Int64 = 0
  private var fileState = ChaosState(username: nil, isLoggedIn: false)
  /// Every state the file has held (what a `values` subscriber may show).
  private var known: Set<ChaosState> = [ChaosState(username: nil, isLoggedIn: false)]

  /// The model when the last backup was taken: a restore rewinds it.
  private struct Model {
    var acknowledged: [Int64: ChaosState?]
    var compactedBelow: Int64
    var seen: [Int64: ChaosState]
    var head: Int64
    var known: Set<ChaosState>
  }
  private var backedUp: Model?

  /// The model as it was at a backup that was brought back.
  private func rewind(to model: Model) {
    (acknowledged, compactedBelow, seen, head, known) = (
      model.acknowledged, model.compactedBelow, model.seen, model.head, model.known
    )
  }
  private var backupPath: String { path + ".backup" }

  init(path: String, sessionctl: String?) throws {
    self.path = path
    self.sessionctl = sessionctl
    for suffix in ["", "-wal", "-shm", ".link", ".backup"] { unlink(path + suffix) }
    // The file exists before the first step, so every spelling can name it.
    instances.append(try SessionStore(path: path, options: .init(origin: "chaos")))
    guard symlink(path, path + ".link") == 0 else { throw TortureFailure("cannot link to \(path)") }
  }

  /// How many entries and values subscribers received (and were checked), so far.
  var delivered: Int {
    deliveredBefore
      + subscribers.reduce(0) { sum, subscriber in
        sum + subscriber.record.withLock { $0.entries.count + $0.values.count }
      } + childSubscribers.reduce(0) { $0 + $1.child.lines.count - 1 }
  }
  /// What subscribers released by a teardown had received.
  private var deliveredBefore = 0

  /// Stops every subscriber and process and releases every instance.
  func tearDown() {
    deliveredBefore = delivered
    for subscriber in subscribers { subscriber.cancel() }
    subscribers = []
    for (child, _) in childSubscribers {
      child.kill(SIGKILL)
      child.wait()
    }
    childSubscribers = []
    instances = []
  }

  // MARK: Steps

  /// Runs one step; returns problems it saw while running (an unexpected error).
  func apply(_ step: ChaosStep) -> [String] {
    do {
      try run(step)
      return []
    } catch {
      return ["\(step) failed: \(error)"]
    }
  }

  private func instance(_ index: Int) -> SessionStore? {
    instances.isEmpty ? nil : instances[index % instances.count]
  }

  /// One write through `store`, by the API `mode` names; an `async` one runs in a task this
  /// thread waits for (the driver's steps are sequential).
  private static func write(
    _ action: ChaosStep.Action, through store: SessionStore, _ mode: ChaosStep.WriteMode
  )
    throws -> SessionEntry?
  {
    guard mode != .sync else {
      switch action {
      case .login(let name): return try store.logIn(as: name)
      case .logout: return try store.logOut()
      case .rename(let name): return try store.rename(to: name)
      }
    }
    let outcome = AsyncOutcome()
    let task = Task {
      do {
        let entry: SessionEntry? =
          switch action {
          case .login(let name): try await store.logIn(as: name)
          case .logout: try await store.logOut()
          case .rename(let name): try await store.rename(to: name)
          }
        outcome.finish(.success(entry))
      } catch {
        outcome.finish(.failure(error))
      }
    }
    if mode == .cancelled { task.cancel() }
    return try outcome.wait().get()
  }

  private func run(_ step: ChaosStep) throws {
    switch step {
    case .open(let spelling, let readOnly, let normal):
      let name: String
      switch spelling {
      case .path: name = path
      case .symbolicLink: name = path + ".link"
      case .relativePath:
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        name = String(repeating: "../", count: depth) + path.drop { $0 == "/" }
      }
      instances.append(
        try SessionStore(
          path: name,
          options: .init(
            durability: normal ? .normal : .full, origin: "chaos\(instances.count)", readOnly: readOnly)))
    case .release(let index):
      guard !instances.isEmpty else { return }
      instances.remove(at: index % instances.count)
    case .write(let index, let action, let mode):
      guard let store = instance(index), !store.options.readOnly else { return }
      let headBefore = try store.bounds().head
      let entry: SessionEntry?
      do {
        entry = try Self.write(action, through: store, mode)
      } catch is CancellationError {
        // A cancelled write writes nothing: no change may have committed meanwhile.
        let head = try store.bounds().head
        if head != headBefore {
          throw TortureFailure(
            "a write that threw CancellationError moved the head from \(headBefore) to \(head)")
        }
        return
      }
      if let entry { acknowledged[entry.cursor.value] = ChaosState(entry.after) }
    case .shell(let action): try shellWrite(action)
    case .python(let action): try pythonWrite(action)
    case .sessionctl(let action): try sessionctlWrite(action)
    case .compact(let index, let keep):
      guard let store = instance(index), !store.options.readOnly else { return }
      let compaction = try store.compact(keepingLast: keep)
      compactedBelow = max(compactedBelow, compaction.bounds.firstAvailable.value)
    case .subscribe(let index, let kind):
      guard let store = instance(index) else { return }
      let recent = max(compactedBelow, head - Int64(index))
      do {
        subscribers.append(try ChaosSubscriber(store, kind, recent: recent))
      } catch is FeedError {
        // A cursor compacted between the check and the subscription: typed, as promised.
      }
    case .cancel(let index):
      let live = subscribers.filter(\.isLive)
      guard !live.isEmpty else { return }
      live[index % live.count].cancel()
    case .resume(let index):
      let resumable = subscribers.filter { $0.record.withLock { $0.cancelled && $0.kind != "values" } }
      guard !resumable.isEmpty, let store = instance(index) else { return }
      let previous = resumable[index % resumable.count]
      subscribers.removeAll { $0 === previous }
      subscribers.append(try ChaosSubscriber(resuming: previous, store))
    case .startChildSubscriber:
      guard childSubscribers.count < 2 else { return }
      let child = try ChildProcess(
        ChildProcess.currentExecutable, ["subscribe", "--db", path, "--count", "0"])
      guard child.waitForLine(within: .seconds(30), where: { $0 == "ready" }) else {
        throw TortureFailure("a subscriber process did not start")
      }
      childSubscribers.append((child, try currentHead()))
    case .stopChildSubscriber(let index):
      guard !childSubscribers.isEmpty else { return }
      let (child, _) = childSubscribers.remove(at: index % childSubscribers.count)
      child.kill(SIGTERM)
      child.wait()
    case .crashWriter(let writes, let count, let microseconds):
      let writer = try ChildProcess(
        ChildProcess.currentExecutable,
        ["write", "--db", path, "--count", String(writes), "--origin", "crash", "--instances", String(count)])
      _ = writer.waitForLine { _ in true }
      usleep(UInt32(microseconds))
      writer.kill(SIGKILL)
      writer.wait()
      for cursor in writer.lines.compactMap(Int64.init) { acknowledged[cursor] = .some(nil) }
    case .checkpoint(let mode):
      _ = try Self.sqlite3(path, "PRAGMA wal_checkpoint(\(mode))")
    case .backup:
      _ = try Self.sqlite3(path, ".backup '\(backupPath)'")
      backedUp = Model(
        acknowledged: acknowledged, compactedBelow: compactedBelow, seen: seen, head: head, known: known)
    case .restore:
      guard let backedUp else { return }
      _ = try Self.sqlite3(path, ".restore '\(backupPath)'")
      // An administrator rewound the history: what was acknowledged after the backup is
      // gone on purpose. Subscribers must end with a typed error or go on gap-free.
      rewind(to: backedUp)
      for subscriber in subscribers {
        subscriber.record.withLock {
          $0.entriesBeforeRestore = $0.entries.count
          $0.valuesBeforeRestore = $0.values.count
        }
      }
    case .tamper(let index): try tamper(index)
    case .replace(let index): try replace(index)
    case .slowPython(let action):
      guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
        return try pythonWrite(action)
      }
      try pythonWrite(
        action,
        through: [
          "/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e",
          "inject=fsync,fdatasync:delay_exit=100000",
        ])
    case .settle:
      let problems = settle()
      if !problems.isEmpty { throw TortureFailure(problems.joined(separator: "; ")) }
    }
  }

  /// Drops the feed trigger: a write through an instance and a new open must be refused
  /// (nothing written, nothing acknowledged); then the trigger is created again.
  private func tamper(_ index: Int) throws {
    let trigger = try Self.sqlite3(
      path, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'session_feed'")
    guard !trigger.isEmpty else {
      throw TortureFailure("the feed trigger is missing before the tamper step")
    }
    _ = try Self.sqlite3(path, "DROP TRIGGER session_feed")
    defer { _ = try? Self.sqlite3(path, trigger + ";") }  // the repair; the check after the step verifies it
    if let store = instance(index), !store.options.readOnly {
      do {
        let entry = try store.rename(to: "tampered")
        throw TortureFailure(
          "a write on a file without its feed trigger succeeded: \(String(describing: entry))")
      } catch let error as SessionStorageError where error.code == .tamperedSchema {}
    }
    do {
      _ = try SessionStore(path: path + ".link", options: .init(origin: "tampered"))
    } catch let error as SessionStorageError where error.code == .tamperedSchema {
      return
    }
    // Sharing the open connections is allowed; a new process must refuse.
    let child = try ChildProcess(
      ChildProcess.currentExecutable, ["read", "--db", path, "--count", "1"], stderr: .null)
    if child.wait() == 0 { throw TortureFailure("a new process opened a file without its feed trigger") }
  }

  /// Renames a copy of the last backup over the file. Writes through the old connections
  /// must be refused; subscribers end with a typed error; then every instance, subscriber
  /// and process is released (so nothing pairs the new file with the old WAL) and the
  /// driver goes on with the new file and the backup's model.
  private func replace(_ index: Int) throws {
    guard let backedUp else { return }
    let copy = path + ".replacement"
    _ = try Self.sqlite3(backupPath, ".backup '\(copy)'")
    guard Glibc.rename(copy, path) == 0 else { throw TortureFailure("cannot rename over \(path)") }
    if let store = instance(index), !store.options.readOnly {
      do {
        let entry = try store.rename(to: "lost")
        throw TortureFailure("a write into a replaced file succeeded: \(String(describing: entry))")
      } catch let error as SessionStorageError where error.code == .fileReplaced {}
    }
    // Live subscribers notice within the poll; give them two seconds to end on their own.
    let deadline = Date().addingTimeInterval(2)
    while subscribers.contains(where: \.isLive), Date() < deadline { usleep(2000) }
    let blind = subscribers.filter(\.isLive).count
    tearDown()
    // SQLite neither checkpoints nor removes the WAL of a file that was moved away, so the
    // old -wal and -shm still sit beside the new file's name. With every process stopped
    // (the documented recovery) they belong to nothing: remove them before anyone opens
    // the new file, or it would be read with the old file's WAL.
    for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
    rewind(to: backedUp)
    instances.append(try SessionStore(path: path, options: .init(origin: "chaos-reopened")))
    if blind > 0 { throw TortureFailure("\(blind) subscriber(s) did not notice the replaced file") }
  }

  /// The UPDATE and the feed row it wrote, in one IMMEDIATE transaction: prints
  /// `changes` then `seq|username|is_logged_in`.
  private static func updateSQL(_ action: ChaosStep.Action) -> String {
    let set: String
    switch action {
    case .login(let name): set = "username = '\(name)', is_logged_in = 1"
    case .logout: set = "is_logged_in = 0"
    case .rename(let name): set = "username = '\(name)'"
    }
    return "BEGIN IMMEDIATE; UPDATE session SET \(set); SELECT changes(); "
      + "SELECT seq || '|' || coalesce(new_username, '') || '|' || new_is_logged_in FROM session_changes "
      + "ORDER BY seq DESC LIMIT 1; COMMIT;"
  }

  /// Records what an outside client reported: the row its change wrote, if the
  /// change was not a no-op.
  private func acknowledge(outside output: String, before: Int64) {
    let lines = output.split(separator: "\n")
    guard lines.count >= 2 else { return }
    let fields = lines[1].split(separator: "|", omittingEmptySubsequences: false)
    guard fields.count == 3, let cursor = Int64(fields[0]), cursor > before else { return }
    acknowledged[cursor] = ChaosState(
      username: fields[1].isEmpty ? nil : String(fields[1]), isLoggedIn: fields[2] == "1")
  }

  private func shellWrite(_ action: ChaosStep.Action) throws {
    let before = try currentHead()
    acknowledge(outside: try Self.sqlite3(path, Self.updateSQL(action)), before: before)
  }

  private func pythonWrite(_ action: ChaosStep.Action, through prefix: [String] = ["/usr/bin/env"]) throws {
    let script = """
      import sqlite3, sys
      db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
      db.execute("BEGIN IMMEDIATE")
      for statement in sys.argv[2].split("; ")[1:4]:
          for row in db.execute(statement):
              print(row[0])
      db.execute("COMMIT")
      """
    let before = try currentHead()
    let python = try ChildProcess(
      prefix[0], prefix.dropFirst() + ["python3", "-c", script, path, Self.updateSQL(action)])
    guard python.wait() == 0 else { throw TortureFailure("the python client failed") }
    acknowledge(outside: python.lines.joined(separator: "\n"), before: before)
  }

  private func sessionctlWrite(_ action: ChaosStep.Action) throws {
    guard let sessionctl else { return }
    let command: [String]
    switch action {
    case .login(let name): command = ["login", name]
    case .logout: command = ["logout"]
    case .rename(let name): command = ["rename", name]
    }
    let child = try ChildProcess(sessionctl, ["--db", path, "--json"] + command)
    guard child.wait() == 0, let line = child.lines.last,
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { throw TortureFailure("sessionctl \(action) failed") }
    guard object["type"] as? String == "change", let cursor = object["cursor"] as? Int,
      let after = object["after"] as? [String: Any]
    else { return }
    acknowledged[Int64(cursor)] = ChaosState(
      username: after["username"] as? String, isLoggedIn: after["isLoggedIn"] as? Bool ?? false)
  }

  // MARK: Checks

  /// Runs the sqlite3 shell, a fresh process that comes and goes like any other client.
  static func sqlite3(_ path: String, _ sql: String) throws -> String {
    let shell = try ChildProcess("/usr/bin/sqlite3", ["-bail", "-cmd", ".timeout 30000", path, sql])
    guard shell.wait() == 0 else { throw TortureFailure("sqlite3 failed on: \(sql)") }
    return shell.lines.joined(separator: "\n")
  }

  /// The newest cursor ever handed out, as `SessionLog` computes it (compaction keeps it).
  private static let headSQL = """
    SELECT max(coalesce((SELECT max(seq) FROM session_changes), 0),
      coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0));
    """

  private func currentHead() throws -> Int64 {
    Int64(try Self.sqlite3(path, Self.headSQL)) ?? 0
  }

  /// Reads the file with a fresh process and compares it with the model, the instances
  /// and the subscribers. Returns the problems; a check that cannot run is one.
  func check() -> [String] {
    do {
      return try compare()
    } catch {
      return ["the check could not run: \(error)"]
    }
  }

  private func compare() throws -> [String] {
    let output = try Self.sqlite3(
      path,
      "PRAGMA quick_check; SELECT coalesce(username, '') || '|' || is_logged_in FROM session; "
        + Self.headSQL
        + " SELECT seq || '|' || coalesce(new_username, '') || '|' || new_is_logged_in FROM session_changes ORDER BY seq;"
    ).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var problems: [String] = []
    guard output.count >= 3, output[0] == "ok", let fileHead = Int64(output[2]) else {
      return ["quick_check: \(output.first ?? "no answer")"]
    }
    func state(_ username: Substring, _ flag: Substring) -> ChaosState {
      ChaosState(username: username.isEmpty ? nil : String(username), isLoggedIn: flag == "1")
    }
    let stateFields = output[1].split(separator: "|", omittingEmptySubsequences: false)
    fileState = state(stateFields[0], stateFields.count > 1 ? stateFields[1] : "")
    var rows: [(Int64, ChaosState)] = []
    for line in output.dropFirst(3) where !line.isEmpty {
      let fields = line.split(separator: "|", omittingEmptySubsequences: false)
      guard fields.count == 3, let cursor = Int64(fields[0]) else { return ["unreadable row '\(line)'"] }
      rows.append((cursor, state(fields[1], fields[2])))
    }
    known.insert(fileState)
    for (cursor, after) in rows {
      known.insert(after)
      if let earlier = seen[cursor], earlier != after {
        problems.append("cursor \(cursor) changed from \(earlier) to \(after): a cursor was reused")
      }
      seen[cursor] = after
    }
    for (previous, next) in zip(rows, rows.dropFirst()) where next.0 != previous.0 + 1 {
      problems.append("cursors jump from \(previous.0) to \(next.0): a hole")
    }
    if let newest = rows.last, newest.1 != fileState {
      problems.append("the session \(fileState) differs from the newest change \(newest.0) \(newest.1)")
    }
    let kept = Dictionary(uniqueKeysWithValues: rows)
    for (cursor, expected) in acknowledged where cursor >= compactedBelow {
      guard let row = kept[cursor] else {
        problems.append("acknowledged cursor \(cursor) is missing in a fresh process (head \(fileHead))")
        continue
      }
      if let expected, expected != row {
        problems.append("acknowledged cursor \(cursor) was \(expected), a fresh process reads \(row)")
      }
    }
    if fileHead < head { problems.append("the head moved back from \(head) to \(fileHead)") }
    head = max(head, fileHead)
    for (index, store) in instances.enumerated() {
      do {
        let state = ChaosState(try store.state)
        if state != fileState {
          problems.append("instance #\(index) reads \(state), a fresh process reads \(fileState)")
        }
        let bounds = try store.bounds()
        if bounds.head.value != fileHead {
          problems.append("instance #\(index) has head \(bounds.head), a fresh process \(fileHead)")
        }
      } catch {
        problems.append("instance #\(index) cannot read: \(error)")
      }
    }
    if let store = instances.first {
      problems += try store.check().filter { $0.verdict == .failed }.map { "check \($0.check): \($0.detail)" }
    }
    problems += subscriberProblems()
    return problems
  }

  /// Every subscriber's entries are a gap-free, duplicate-free run of the log that agrees
  /// with it; an end is a typed one.
  private func subscriberProblems() -> [String] {
    var problems: [String] = []
    for (index, subscriber) in subscribers.enumerated() {
      let record = subscriber.record.withLock { $0 }
      let name = "subscriber #\(index) (\(record.kind))"
      if let ended = record.ended, !record.endedTyped { problems.append("\(name) ended untyped: \(ended)") }
      if let start = record.start {
        for (offset, entry) in record.entries.enumerated() where entry.cursor != start + 1 + Int64(offset) {
          problems.append(
            "\(name) received \(entry.cursor) as entry \(offset) after \(start): a gap or repeat")
          break
        }
      }
      for entry in record.entries.dropFirst(record.entriesBeforeRestore) {
        if let row = seen[entry.cursor], row != entry.after {
          problems.append("\(name) received \(entry.cursor) as \(entry.after), the log has \(row)")
          break
        }
      }
      for value in record.values.dropFirst(max(1, record.valuesBeforeRestore)) where !known.contains(value) {
        problems.append("\(name) received the value \(value), after no change in the log")
        break
      }
    }
    for (index, (child, start)) in childSubscribers.enumerated() {
      let cursors = child.lines.filter { $0 != "ready" }.compactMap { $0.split(separator: " ").first }
      for (offset, cursor) in cursors.enumerated() where Int64(cursor) != start + 1 + Int64(offset) {
        if cursor == "ended" { break }  // a FeedError, typed: the process said so and exited
        problems.append("subscriber process #\(index) printed \(cursor) as entry \(offset) after \(start)")
        break
      }
    }
    return problems
  }

  /// Waits (at most 10 s) until every live subscriber has received everything up to the
  /// head, and every `values` subscriber shows the file's state.
  func settle() -> [String] {
    let deadline = Date().addingTimeInterval(10)
    while true {
      let behind =
        subscribers.filter(\.isLive).compactMap { subscriber -> String? in
          let record = subscriber.record.withLock { $0 }
          if record.kind == "values" {
            return record.values.last == fileState
              ? nil
              : "a values subscriber shows \(record.values.last.map(\.description) ?? "nothing"), the file \(fileState)"
          }
          return (record.last ?? 0) >= head
            ? nil : "a \(record.kind) subscriber is at \(record.last ?? 0), the head at \(head)"
        }
        + childSubscribers.compactMap { child, start in
          let last =
            child.lines.last.flatMap { $0.split(separator: " ").first }.flatMap { Int64($0) } ?? start
          let ended = child.lines.contains { $0.hasPrefix("ended") }
          return ended || last >= head ? nil : "a subscriber process is at \(last), the head at \(head)"
        }
      if behind.isEmpty { return [] }
      if Date() > deadline { return behind }
      usleep(2000)
    }
  }
}

/// The result of an `async` write, handed to the synchronous thread that waits for it.
private final class AsyncOutcome: Sendable {
  private let result = Mutex<Result<SessionEntry?, any Error>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  func finish(_ outcome: Result<SessionEntry?, any Error>) {
    result.withLock { $0 = outcome }
    done.signal()
  }

  func wait() -> Result<SessionEntry?, any Error> {
    done.wait()
    return result.withLock { $0 } ?? .success(nil)
  }
}
