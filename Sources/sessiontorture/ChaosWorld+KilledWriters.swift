import Foundation
import SessionStorage
import SystemKit
import ToolingKit

/// Writer processes killed in the middle of their writes, and what the write they were
/// making may do afterwards.
///
/// A killed writer's last write was issued and never acknowledged: nobody was told whether
/// it committed. On SQLite its commit may have reached the WAL and not the wal-index: the
/// connections still open read on without it, and the WAL recovery of the next process that
/// opens the file with nobody else on it finds it and brings it in. On PostgreSQL a COMMIT
/// the server received goes through after its client died. Either way the write may appear
/// later, and the model allows exactly this (<doc:Reliability>): at most once, as the next
/// entry after the entries that preceded it (never after one written later), and exactly as
/// it was issued (cursor, origin, before, after, a time within its write). Any other change
/// of the head is for the strict checks to report.
extension ChaosWorld {
  /// A writer process (through `count` instances) killed `microseconds` after its first
  /// acknowledged write: the file must hold a prefix of its writes, every acknowledged one
  /// included.
  func crashWriter(writes: Int, instances count: Int, microseconds: Int) throws {
    let names = freshName("crash")
    let candidates = childWrites(writes, origin: "crash", names: names)
    let start = ChaosClock.wallMilliseconds()
    let writer = try Self.spawnChild([
      "write", "--db", path, "--count", String(writes), "--origin", "crash", "--instances", String(count),
      "--names", names,
    ])
    _ = writer.waitForLine { _ in true }
    usleep(UInt32(microseconds))
    writer.kill(SIGKILL)
    Self.reap(writer)
    try settleKilled(writer, candidates, since: start, by: "the killed writer")
  }

  /// A writer process killed as it enters its `when`-th `fsync`/`fdatasync` of the `-wal`
  /// (strace fault injection on that file alone): after a commit's frames reached the WAL
  /// and before the wal-index says so, the moment that leaves a commit for the next recovery
  /// to find. Which call that is depends on the file alone, never on timing: the writer
  /// syncs the `-wal` once per commit, and a new WAL's header before its first commit (so
  /// the second call is always a commit's, unless a checkpoint of the writer's came first).
  func killedAtSync(writes: Int, when: Int) throws {
    let strace = "/usr/bin/strace"
    guard FileManager.default.isExecutableFile(atPath: strace) else {
      return note("no \(strace): the steps that kill a writer at its fsync are skipped")
    }
    // strace names a descriptor's file by its real path, which SQLite's `-wal` is beside.
    let wal = URL(fileURLWithPath: path).resolvingSymlinksInPath().path + "-wal"
    let names = freshName("crash")
    let candidates = childWrites(writes, origin: "crash", names: names)
    let start = ChaosClock.wallMilliseconds()
    let writer = try Self.spawn(
      strace,
      [
        "-f", "-qq", "-o", "/dev/null", "-P", wal, "-e",
        "inject=fdatasync,fsync:signal=SIGKILL:when=\(when)",
        ChildProcess.currentExecutable, "write", "--db", path, "--count", String(writes), "--origin", "crash",
        "--names", names,
      ], stderr: .null)
    Self.reap(writer)
    try settleKilled(writer, candidates, since: start, by: "the writer killed at fsync \(when)")
  }

  /// Checks what a killed writer acknowledged (a prefix of `candidates`) and takes what it
  /// wrote from the file; the write after it may appear later.
  private func settleKilled(
    _ writer: ChildProcess, _ candidates: [ChaosEntry], since start: Int64, by name: String
  ) throws {
    try backend.awaitConnectionsGone(origin: "crash")
    let printed = writer.lines.compactMap(Int64.init)
    guard printed == candidates.prefix(printed.count).map(\.cursor) else {
      throw TortureFailure(
        "\(name) acknowledged \(printed), the model expects a prefix of \(candidates.map(\.cursor))")
    }
    try adopt(
      candidates, required: printed.count, window: start...ChaosClock.wallMilliseconds(),
      ackedAt: Monotonic.now(), by: name)
  }

  /// Notes that `entry`, issued by `writer` within `window` (ms), was not acknowledged and
  /// is not in the file: it may appear later.
  func issuedWithoutAcknowledgement(_ entry: ChaosEntry, window: ClosedRange<Int64>, by writer: String) {
    model.unacknowledged = ChaosModel.Unacknowledged(entry: entry, window: window, writer: writer)
  }

  /// Reads the file with a fresh process (which runs the WAL recovery when nobody else has
  /// the file open) while an unacknowledged write may still appear; when it did, checks it
  /// is that write, exactly, at the next cursor, and takes it into the model.
  func takeUnacknowledgedIfItAppeared() throws {
    guard let pending = model.unacknowledged else { return }
    let (head, rows) = try newRows()
    guard head == model.head + 1, rows.count == 1, let row = rows.first, row.cursor == head else { return }
    let what = "\(pending.writer)'s unacknowledged \(pending.entry.after) at \(head)"
    try Self.requireTime(row.after.updatedAt, within: pending.window, of: what)
    model.learn(from: row)
    var expected = model.rebased(pending.entry)
    expected.cursor = model.head + 1
    expected.setTime(row.after.updatedAt)
    if let difference = expected.difference(from: row) {
      throw TortureFailure("\(what) appeared with \(difference)")
    }
    commit(expected, window: pending.window, at: Monotonic.now(), acknowledged: false)
    appeared += 1
  }
}
