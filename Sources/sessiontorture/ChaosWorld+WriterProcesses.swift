import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// Writer processes that report each write as they make it (`Children.apply`): one whose
/// `fsync` calls fail, and one that stays alive between its writes.
extension ChaosWorld {
  /// Reads what a writer process of `Children.apply` printed for `actions`, in order, and
  /// settles each against the model: "ok" must be the model's entry, "none" a no-op, an
  /// "error" the model predicts as a refusal is one, and any other "error" changed nothing (the check after the step finds any row it left). An "unknown"
  /// (a COMMIT the disk failed, which the library reports as possibly still in the `-wal`)
  /// changed nothing that anyone sees now, and may appear later as a write nobody
  /// acknowledged may. Returns how many writes it reported.
  func settleReports(
    _ lines: [String], _ actions: [ChaosStep.Action], origin: String, window: ClosedRange<Int64>,
    by writer: String,
    failuresAllowed: Bool
  ) throws -> Int {
    let reports = lines.filter { line in
      ["ok ", "none ", "error ", "unknown "].contains { line.hasPrefix($0) }
    }
    guard reports.count <= actions.count else { throw TortureFailure("\(writer) printed \(lines)") }
    for (report, action) in zip(reports, actions) {
      let words = report.split(separator: " ", maxSplits: 2).map(String.init)
      guard words.count >= 2, let ackedAt = UInt64(words[1]) else {
        throw TortureFailure("\(writer) printed '\(report)'")
      }
      switch words[0] {
      case "ok":
        guard words.count == 3,
          let entry = try? JSONDecoder().decode(SessionEntry.self, from: Data(words[2].utf8))
        else { throw TortureFailure("\(writer) printed '\(report)'") }
        try settle(action, origin: origin, returned: entry, window: window, ackedAt: ackedAt, by: writer)
      case "none":
        try settle(action, origin: origin, returned: nil, window: window, ackedAt: ackedAt, by: writer)
      case "error" where ChaosModel.isRefusal(report, model.predict(action, origin: origin)):
        // A write the rules refuse: nothing written, as the model predicts.
        try settle(
          action, origin: origin, returned: nil, refused: report, window: window, ackedAt: ackedAt, by: writer
        )
      default:
        guard failuresAllowed else { throw TortureFailure("\(writer): \(action) failed: \(report)") }
        failedWrites += 1
        if words[0] == "unknown", let issued = model.predict(action, origin: origin).entry {
          issuedWithoutAcknowledgement(issued, window: window, by: writer)
        }
      }
    }
    return reports.count
  }

  func ioErrorWriter(_ drawn: [ChaosStep.Action], when: Int, sticky: Bool) throws {
    let strace = "/usr/bin/strace"
    guard FileManager.default.isExecutableFile(atPath: strace) else {
      return note("no \(strace): the steps that make fsync fail are skipped")
    }
    // A login of a name no account holds comes first: at least one write commits (and
    // syncs), where the writes drawn may all be refusals or no-ops on the roster.
    let actions = [.login(freshName("eio"))] + drawn
    // A connection of this process stays open meanwhile, so the writer's close is never the
    // last one: a failed commit's frames are left beyond the WAL's end, never checkpointed.
    let holder =
      try instances.first ?? backend.open(path, origin: "chaos-holder")
    defer { withExtendedLifetime(holder) {} }
    let origin = "eio"
    let writer = "the writer process with fsync failing at call \(when)\(sticky ? " and after" : "")"
    let start = ChaosClock.wallMilliseconds()
    let child = try Self.spawn(
      strace,
      [
        "-f", "-qq", "-o", "/dev/null", "-e",
        "inject=fdatasync,fsync:error=EIO:when=\(when)\(sticky ? "+" : "")",
        ChildProcess.currentExecutable, "apply", "--db", path, "--origin", origin,
      ] + actions.map(\.argument), stderr: .file(stderrPath))
    let status = Self.reap(child)
    let window = start...ChaosClock.wallMilliseconds()
    let lines = child.lines
    guard lines.first == "ready" else {
      let stderr = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
      if lines.isEmpty, stderr.contains("strace:") {
        note("the writer with failing fsyncs did not run (status \(status)): \(stderr.prefix(200))")
      }
      // It could not open the store (a failing fsync there): it wrote nothing.
      return try adopt([], required: 0, window: window, ackedAt: Monotonic.now(), by: writer)
    }
    let reported = try settleReports(
      lines, actions, origin: origin, window: window, by: writer, failuresAllowed: true)
    if reported < actions.count, let next = model.predict(actions[reported], origin: origin).entry {
      // It died in the middle of a write (its outcome unknown): the file says.
      try adopt([next], required: 0, window: window, ackedAt: Monotonic.now(), by: writer)
    }
    // A failed COMMIT is invisible now (the held connection keeps any recovery away), even
    // where it may appear later.
    let (head, _) = try newRows()
    guard head == model.head else {
      throw TortureFailure("\(writer): the head is \(head) after its writes, the model's \(model.head)")
    }
  }

  func liveWriter(_ actions: [ChaosStep.Action], pause: Int) throws {
    let origin = "live"
    let writer = "the writer process that stays alive"
    let start = ChaosClock.wallMilliseconds()
    let child = try Self.spawnChild(
      ["apply", "--db", path, "--origin", origin, "--pause-ms", String(pause), "--hold"]
        + actions.map(\.argument),
      stdin: .pipe)
    defer {
      child.closeInput()
      if child.status(within: .seconds(10)) == nil { child.kill(SIGKILL) }
      Self.reap(child)
    }
    guard child.waitForLine(within: .seconds(20), where: { $0 == "done" }) else {
      throw TortureFailure("\(writer) did not finish its writes: \(child.lines)")
    }
    _ = try settleReports(
      child.lines, actions, origin: origin, window: start...ChaosClock.wallMilliseconds(), by: writer,
      failuresAllowed: false)
    // While it is alive, nothing but file notifications tells subscribers of its commits.
    let problems = catchUp()
    guard problems.isEmpty else { throw TortureFailure(problems.joined(separator: "; ")) }
  }
}
