import CSQLite
import FeedKit
import Foundation
import SessionStorage
import ToolingKit

/// A scenario's scratch space: a fresh temporary directory with one sub-directory for our
/// store and one for the baseline's file, so that a watcher on one directory never wakes for
/// the other's writes.
final class Workspace {
  private let directory: TemporaryDirectory

  init(_ scenario: String) throws {
    do {
      directory = try TemporaryDirectory(prefix: "sessionbench-\(scenario)")
    } catch {
      throw BenchError("cannot create a temporary directory: \(error)")
    }
    for side in ["ours", "raw"] {
      try FileManager.default.createDirectory(
        atPath: directory.file(side), withIntermediateDirectories: false)
    }
  }

  var root: String { directory.path }

  /// Our store's file.
  var ours: String { directory.file("ours/session.db") }

  /// The baseline's file.
  var raw: String { directory.file("raw/session.db") }

  /// Creates the baseline's file with the store's schema: a `SessionStore` opens it once
  /// and applies the migrations; from then on only raw `sqlite3_*` calls touch it.
  func createRawSchema() throws {
    _ = try SessionStore(path: raw, options: .init(origin: "sessionbench"))
  }
}

/// `write-normal`, `write-full`, `write-normal-100`: `login`/`logout` of `alice` alternating
/// through `SessionStore`, against the raw baseline of the same write (``RawWriter``: the
/// store's statements in one `BEGIN IMMEDIATE` transaction on raw prepared statements), at
/// the same `synchronous` level. `accounts` is the roster's size while it is measured: the
/// accounts other than `alice` join both files first (``Roster``).
enum WriteScenario {
  static func run(
    _ name: String, durability: SessionStore.Durability, accounts: Int = 1, scale: Scale
  ) throws -> Outcome {
    let workspace = try Workspace(name)
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: durability, origin: "sessionbench"))
    let raw = try RawWriter(
      db: RawDB(path: workspace.raw, synchronous: durability == .full ? "FULL" : "NORMAL"))
    try Roster.populate(store, raw, accounts: accounts)
    return try alternating(
      name, scale: scale,
      ours: { login in try (login ? store.blocking.logIn(as: "alice") : store.blocking.logOut()) != nil },
      raw: { login in try raw.write(login: login) })
  }

  /// Signs in and out alternately, ours and raw, in ``Paired/blocks`` of writes, and judges
  /// the aim of writes: ours ≥ 0.90× raw ops/s. Each closure signs in (`true`) or out and
  /// returns whether it changed the session.
  static func alternating(
    _ name: String, scale: Scale, ours: (Bool) throws -> Bool, raw: (Bool) throws -> Bool
  ) throws -> Outcome {
    let (ours, baseline) = try Paired.blocks(
      rounds: scale.rounds, block: scale.writeBlock,
      ours: { index in
        guard try ours(index.isMultiple(of: 2)) else {
          throw BenchError("write \(index) through the store changed nothing")
        }
      },
      raw: { index in
        guard try raw(index.isMultiple(of: 2)) else { throw BenchError("raw write \(index) changed nothing") }
      })
    let ratio = ours.opsPerSecond / baseline.opsPerSecond
    return Outcome(
      measurements: Measurement.latency(name, ours: ours, baseline: baseline),
      verdicts: [
        Verdict(
          scenario: name, aim: "ops/s ≥ 0.90× raw", measured: String(format: "%.2f×", ratio),
          met: ratio >= 0.9)
      ])
  }
}

/// The roster of a scenario that measures against more than one account: `accounts − 1`
/// others (`user-002` …, signed in) join ours through the store and the baseline's file (or
/// schema) through its raw writer, before anything is timed; `alice`, the account the
/// scenario writes, joins with its first write (untimed too), and is the active one from
/// then on.
enum Roster {
  static func populate(_ store: SessionStore, _ raw: RawWriter, accounts: Int) throws {
    try populate(store, accounts: accounts) { try raw.write($0) }
  }

  /// The others join `store` and, through `join` (which signs a name in on the baseline's
  /// side and returns whether that changed anything), the baseline.
  static func populate(_ store: SessionStore, accounts: Int, raw join: (String) throws -> Bool) throws {
    guard accounts > 1 else { return }
    for number in 2...accounts {
      let name = Self.name(number)
      guard try store.blocking.logIn(as: name) != nil, try join(name) else {
        throw BenchError("\(name) did not join the roster")
      }
    }
  }

  /// The name of the account numbered `number`: `user-002` for 2.
  static func name(_ number: Int) -> String { "user-" + String(number).leftPadded(to: 3) }
}

extension String {
  /// The string with leading zeros up to `width` characters.
  fileprivate func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}

/// `read`: `SessionStore.state` against stepping the same prepared SELECT with raw calls
/// and reading its three columns.
enum ReadScenario {
  static func run(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("read")
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: .normal, origin: "sessionbench"))
    try store.blocking.logIn(as: "alice")
    let db = try RawDB(path: workspace.raw, synchronous: "NORMAL")
    try RawWriter(db: db).write(login: true)
    let select = try db.prepare("SELECT username, is_logged_in, updated_at FROM session WHERE id = 1")
    let (ours, baseline) = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock, warmup: 1000,
      ours: { _ in
        _ = try store.state
      },
      raw: { _ in
        guard sqlite3_step(select) == SQLITE_ROW else { throw BenchError("the session row is missing") }
        _ = sqlite3_column_text(select, 0)
        _ = sqlite3_column_int64(select, 1)
        _ = sqlite3_column_text(select, 2)
        sqlite3_reset(select)
      })
    let ratio = ours.p50 / baseline.p50
    return Outcome(
      measurements: Measurement.latency("read", ours: ours, baseline: baseline),
      verdicts: [
        Verdict(
          scenario: "read", aim: "p50 ≤ 2× raw", measured: String(format: "%.2f×", ratio), met: ratio <= 2)
      ])
  }
}

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

  /// `count` changes through the baseline's write (the store's statements), `batch` per
  /// transaction; the first signs `alice` in when `start` is even, out when it is odd.
  static func fill(_ writer: RawWriter, count: Int, from start: Int, batch: Int = 10_000) throws {
    var written = 0
    while written < count {
      try writer.db.exec("BEGIN IMMEDIATE")
      for _ in 0..<min(batch, count - written) {
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
