import CommandLineKit
import Foundation
import ProcessKit
import SessionStorage

/// Writers in several processes, readers, subscribers and an outside client at once: every
/// change reaches every subscriber exactly once, in commit order, and no writer sees
/// SQLITE_BUSY.
struct ConcurrencyScenario: TortureScenario {
  static let writers = Option<Int>("writers", placeholder: "n", help: "Writer processes (default 4).")
  static let writes = Option<Int>("writes", placeholder: "n", help: "Writes by each writer (default 250).")
  static let readers = Option<Int>("readers", placeholder: "n", help: "Reader processes (default 2).")
  static let subscribers = Option<Int>(
    "subscribers", placeholder: "n", help: "Subscriber processes (default 2).")
  static let external = Option<Int>(
    "external", placeholder: "n", help: "Writes by the outside Python client (default 100).")

  static let spec = CommandSpec(
    "concurrency", abstract: "Writers, readers, subscribers and a Python client at once.",
    options: [writers, writes, readers, subscribers, external])

  let path: String
  let writers: Int
  let writes: Int
  let readers: Int
  let subscribers: Int
  let external: Int

  init(_ arguments: ParsedArguments) throws {
    path = try arguments.required(Torture.db)
    writers = try arguments[Self.writers] ?? 4
    writes = try arguments[Self.writes] ?? 250
    readers = try arguments[Self.readers] ?? 2
    subscribers = try arguments[Self.subscribers] ?? 2
    external = try arguments[Self.external] ?? 100
  }

  /// An outside client: Python's sqlite3 module, each UPDATE in its own IMMEDIATE
  /// transaction with a busy timeout, as a careful script would do it.
  var pythonWriter: String {
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
    for i in range(int(sys.argv[2])):
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE session SET username = ?", ("python-%d" % i,))
        db.execute("COMMIT")
    """
  }

  func run() throws -> Int32 {
    var problems: [String] = []
    let head = try SessionStore(path: path, options: .init(origin: "setup")).bounds().head.value
    // Some changes may be no-ops only if the Python client repeats the current name; it never does.
    let total = writers * writes + external
    let listeners = try (0..<subscribers).map { _ in
      try ChildProcess(ChildProcess.currentExecutable, ["subscribe", "--db", path, "--count", String(total)])
    }
    for listener in listeners where !listener.waitForLine(within: .seconds(30), where: { $0 == "ready" }) {
      problems.append("a subscriber did not start")
    }
    let writerChildren = try (0..<writers).map {
      try ChildProcess(
        ChildProcess.currentExecutable,
        ["write", "--db", path, "--count", String(writes), "--origin", "writer\($0)"])
    }
    let readerChildren = try (0..<readers).map { _ in
      try ChildProcess(ChildProcess.currentExecutable, ["read", "--db", path, "--count", "2000"])
    }
    let python = try ChildProcess("/usr/bin/env", ["python3", "-c", pythonWriter, path, String(external)])

    let workers =
      [("python", python)] + writerChildren.map { ("writer", $0) } + readerChildren.map { ("reader", $0) }
    for (name, child) in workers {
      let status = child.wait()
      if status != 0 { problems.append("a \(name) exited with \(status) (see its error above)") }
    }
    // Measured while the subscribers still hold the file open: none keeps a read
    // transaction, so checkpoints keep resetting the WAL.
    let wal =
      (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
    if wal > 64 << 20 { problems.append("the WAL grew to \(wal) bytes") }
    let expected = Array(stride(from: head + 1, through: head + Int64(total), by: 1))
    var sequences: [[String]] = []
    for listener in listeners {
      let status = (try? listener.wait(timeout: .seconds(60))) ?? 128 + SIGKILL
      if status != 0 { problems.append("a subscriber exited with \(status)") }
      let received = listener.lines.filter { $0 != "ready" }
      sequences.append(received)
      let cursors = received.compactMap { $0.split(separator: " ").first.flatMap { Int64($0) } }
      if cursors != expected {
        problems.append(
          "a subscriber received \(cursors.count) changes, not exactly cursors \(head + 1)…\(head + Int64(total)) in order"
        )
      }
      let externalCount = received.filter { $0.hasSuffix(" external") }.count
      if externalCount != external {
        problems.append("a subscriber saw \(externalCount) external changes, not \(external)")
      }
    }
    if Set(sequences.map { $0.joined(separator: "\n") }).count > 1 {
      problems.append("subscribers disagree on the order of changes")
    }
    let acknowledged = Set(writerChildren.flatMap { $0.lines.compactMap(Int64.init) })
    if acknowledged.count != writers * writes {
      problems.append("writers acknowledged \(acknowledged.count) changes, not \(writers * writes)")
    }
    problems += try Verification.problems(path: path, acknowledged: acknowledged)
    Torture.emit(
      #"{"scenario":"concurrency","changes":\#(total),"subscribers":\#(subscribers),"walBytes":\#(wal),"problems":\#(problems.count)}"#
    )
    for problem in problems { FileHandle.standardError.write(Data("problem: \(problem)\n".utf8)) }
    return problems.isEmpty ? 0 : 1
  }
}
