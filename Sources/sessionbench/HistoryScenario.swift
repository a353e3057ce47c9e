import CSQLite
import FeedKit
import Foundation
import SessionStorage

/// `history`: a log of 1,000,000 changes (10,000 with `--quick`). Reads a page of 100
/// entries at the oldest end (`.beginning`, the log's tail) and at the newest end (after
/// head − 100, the log's head) through `SessionStore.history`, against the same SELECT
/// stepped with raw calls; the same newest page read while the log held only 1,000
/// changes shows whether page reads depend on the log's length; and the file's size per
/// change.
enum HistoryScenario {
  static let smallLog = 1_000

  static func run(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("history")
    let path = workspace.ours
    _ = try SessionStore(path: path, options: .init(origin: "sessionbench"))
    let db = try RawDB(path: path, synchronous: "NORMAL")
    try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    let emptySize = try fileSize(path)
    let writer = try RawWriter(db: db, origin: "sessionbench")
    try fill(writer, count: smallLog, from: 0)
    var outcome = Outcome()
    let small = try pages(path: path, db: db, scale: scale)
    outcome.measurements += Measurement.latency(
      "history-newest-1k", ours: small.newest.ours, baseline: small.newest.raw)

    FileHandle.standardError.write(Data("  filling the log to \(scale.historyChanges) changes…\n".utf8))
    try fill(writer, count: scale.historyChanges - smallLog, from: smallLog)
    try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    let bytesPerChange = Double(try fileSize(path) - emptySize) / Double(scale.historyChanges)
    let large = try pages(path: path, db: db, scale: scale)
    outcome.measurements += Measurement.latency(
      "history-oldest", ours: large.oldest.ours, baseline: large.oldest.raw)
    outcome.measurements += Measurement.latency(
      "history-newest", ours: large.newest.ours, baseline: large.newest.raw)
    outcome.measurements.append(
      Measurement(scenario: "history", metric: .bytesPerChange, ours: bytesPerChange, baseline: nil))
    let growth = large.newest.ours.p50 / small.newest.ours.p50
    let oldest = large.oldest.ours.p50 / small.newest.ours.p50
    outcome.verdicts.append(
      Verdict(
        scenario: "history", aim: "page p50 independent of log length",
        measured: String(
          format: "newest %.2f×, oldest %.2f× the 1k-log page", growth, oldest),
        met: growth <= 1.5 && oldest <= 1.5))
    outcome.verdicts.append(
      .latency("history-newest", ours: large.newest.ours, raw: large.newest.raw, p50: 1.5))
    return outcome
  }

  /// `count` changes through the store's own UPDATE, 10,000 per transaction.
  static func fill(_ writer: RawWriter, count: Int, from start: Int) throws {
    var written = 0
    while written < count {
      try writer.db.exec("BEGIN IMMEDIATE")
      for _ in 0..<min(10_000, count - written) {
        guard try writer.update(login: (start + written).isMultiple(of: 2)) else {
          throw BenchError("fill write \(start + written) changed nothing")
        }
        written += 1
      }
      try writer.db.exec("COMMIT")
    }
  }

  private typealias Pair = (ours: Sample, raw: Sample)

  /// A page of 100 at each end of the log, through the store and raw.
  private static func pages(path: String, db: RawDB, scale: Scale) throws -> (oldest: Pair, newest: Pair) {
    let store = try SessionStore(path: path, options: .init(durability: .normal, origin: "sessionbench"))
    let bounds = try store.bounds()
    let select = try db.prepareChanges(limit: 100)
    let newest = Cursor(bounds.head.value - 100)
    let oldest = Cursor(bounds.firstAvailable.value - 1)
    func rawPage(after cursor: Cursor) throws {
      let rows = RawDB.readChanges(select, after: cursor.value)
      guard rows == 100 else { throw BenchError("raw page after \(cursor) had \(rows) rows") }
    }
    func oursPage(from start: FeedStart) throws {
      let page = try store.history(from: start, limit: 100)
      guard page.count == 100 else { throw BenchError("page from \(start) had \(page.count) entries") }
    }
    let oldestPair = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock / 2, warmup: 50,
      ours: { _ in try oursPage(from: .beginning) }, raw: { _ in try rawPage(after: oldest) })
    let newestPair = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock / 2, warmup: 50,
      ours: { _ in try oursPage(from: .after(newest)) }, raw: { _ in try rawPage(after: newest) })
    return (oldestPair, newestPair)
  }

  private static func fileSize(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.size] as? NSNumber)?.intValue ?? 0
  }
}
