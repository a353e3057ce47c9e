import CSQLite
import SessionStorage

/// `write-normal`, `write-full`: `login`/`logout` alternating through `SessionStore`,
/// against `BEGIN IMMEDIATE`, the store's UPDATE (its trigger appends the change row),
/// `COMMIT` on raw prepared statements, at the same `synchronous` level.
enum WriteScenario {
  static func run(_ name: String, durability: SessionStore.Durability, scale: Scale) throws -> Outcome {
    let workspace = try Workspace(name)
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: durability, origin: "sessionbench"))
    let raw = try RawWriter(
      db: RawDB(path: workspace.raw, synchronous: durability == .full ? "FULL" : "NORMAL"))
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
