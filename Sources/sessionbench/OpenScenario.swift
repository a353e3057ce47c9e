import CSQLite
import Foundation
import SessionStorage
import ToolingKit

/// `open`: what an app pays at launch and a CLI on every command. Ours opens an existing
/// store (`SessionStore(path:)`: the file checks, the migration ledger, the schema
/// verification), reads its `state` and releases it, which closes the file; the baseline
/// opens the same kind of file with `sqlite3_open_v2` (the store's flags), steps the store's
/// SELECT of the session row, reads its three columns and closes it. Alternating blocks,
/// as `read`.
enum OpenScenario {
  static func run(scale: Scale) throws -> Outcome {
    let workspace = try Workspace("open")
    try workspace.createRawSchema()
    let options = SessionStore.FileOptions(origin: "sessionbench")
    try SessionStore(path: workspace.ours, options: options).blocking.logIn(as: "alice")
    try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL")).write(login: true)
    let (ours, baseline) = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock, warmup: scale.quick ? 20 : 100,
      ours: { _ in
        let store = try SessionStore(path: workspace.ours, options: options)
        guard try store.state.username == "alice" else { throw BenchError("the store lost its username") }
      },
      raw: { _ in try rawOpenAndRead(workspace.raw) })
    let ratio50 = ours.p50 / baseline.p50
    let ratio90 = ours.percentile(0.9) / baseline.percentile(0.9)
    return Outcome(
      measurements: Measurement.latency("open", ours: ours, baseline: baseline),
      verdicts: [
        Verdict(
          scenario: "open", aim: "p50 ≤ 3× raw",
          measured: String(
            format: "p50 %.2f× (%.1f µs vs %.1f µs), p90 %.2f× (%.1f µs vs %.1f µs)", ratio50, ours.p50,
            baseline.p50, ratio90, ours.percentile(0.9), baseline.percentile(0.9)),
          met: ratio50 <= 3)
      ])
  }

  /// The SELECT the store reads its state with.
  private static let stateSQL = "SELECT username, is_logged_in, updated_at FROM session WHERE id = 1"

  /// Opens `path` with the store's flags, reads the session row and closes the file.
  static func rawOpenAndRead(_ path: String) throws {
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(
      path, &db, SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_READWRITE, nil)
    defer { sqlite3_close_v2(db) }
    guard rc == SQLITE_OK else {
      throw BenchError("cannot open \(path): \(String(cString: sqlite3_errstr(rc)))")
    }
    var select: OpaquePointer?
    guard sqlite3_prepare_v2(db, stateSQL, -1, &select, nil) == SQLITE_OK, let select else {
      throw BenchError("cannot prepare the state SELECT: \(String(cString: sqlite3_errmsg(db)))")
    }
    defer { sqlite3_finalize(select) }
    guard sqlite3_step(select) == SQLITE_ROW else { throw BenchError("the session row is missing") }
    _ = sqlite3_column_text(select, 0)
    _ = sqlite3_column_int64(select, 1)
    _ = sqlite3_column_text(select, 2)
  }
}
