import CSQLite
import SessionStorage

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
