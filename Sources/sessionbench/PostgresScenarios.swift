import CLibPQ
import SessionStoragePostgres

/// `pg-write`, `pg-read`, `pg-deliver-remote`: ``PostgresSessionStore`` against raw libpq
/// doing the same statements, on the server of ``PostgresServer``, each scenario in fresh
/// schemas of its own (``PostgresSchemas``).
enum PostgresScenarios {
  /// The `pg-*` scenarios, in the order of ``Scenarios/names``.
  static let names = Scenarios.names.filter { $0.hasPrefix("pg-") }

  static func run(_ name: String, scale: Scale, server: PostgresServer) throws -> Outcome {
    let schemas = try PostgresSchemas(server: try server.url())
    switch name {
    case "pg-write": return try write(schemas, scale: scale)
    case "pg-read": return try read(schemas, scale: scale)
    default: return try deliverRemote(schemas, scale: scale)
    }
  }

  /// `pg-write`: `logIn(as:)`/`logOut()` alternating through the store (BEGIN, the UPDATE,
  /// reading the entry back, COMMIT) against ``RawPQWriter`` (BEGIN, the same UPDATE, COMMIT).
  private static func write(_ schemas: PostgresSchemas, scale: Scale) throws -> Outcome {
    let store = try schemas.store()
    let raw = RawPQWriter(try schemas.rawConnection())
    return try WriteScenario.alternating(
      "pg-write", scale: scale,
      ours: { login in try (login ? store.blocking.logIn(as: "alice") : store.blocking.logOut()) != nil },
      raw: { login in try raw.write(login: login) != nil })
  }

  /// `pg-read`: `store.state` against the store's SELECT of the session row with
  /// `PQexecParams`, looking at its four columns. No aim: reported only.
  private static func read(_ schemas: PostgresSchemas, scale: Scale) throws -> Outcome {
    let store = try schemas.store()
    try store.blocking.logIn(as: "alice")
    let raw = try schemas.rawConnection()
    try RawPQWriter(raw).write(login: true)
    let (ours, baseline) = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock, warmup: 200,
      ours: { _ in
        _ = try store.state
      },
      raw: { _ in
        let rows = try raw.query(RawPQReads.snapshotSQL) { result in
          RawPQReads.readRows(result)
          return PQntuples(result)
        }
        guard rows == 1 else { throw BenchError("the session row is missing") }
      })
    return Outcome(measurements: Measurement.latency("pg-read", ours: ours, baseline: baseline))
  }

  /// `pg-deliver-remote`: the store writes, a subscriber in another process
  /// (`child-pg-subscriber`: a store and `changes(from: .now)`) reports each entry; the
  /// baseline writes with ``RawPQWriter`` and a raw `LISTEN` loop in another process
  /// (`child-pg-raw-listener`) reports each row. Timed as `deliver-remote`.
  private static func deliverRemote(_ schemas: PostgresSchemas, scale: Scale) throws -> Outcome {
    let store = try schemas.store()
    var ours = DeliverScenario.Side()
    var raw = DeliverScenario.Side()
    // Our subscriber and the raw listener, each in a process of its own and on its own schema.
    let children = try [
      ("child-pg-subscriber", schemas.ours, ours.arrivals),
      ("child-pg-raw-listener", schemas.raw, raw.arrivals),
    ].map { command, schema, arrivals in
      try BenchChild([command, "--postgres", schemas.server, "--schema", schema], arrivals: arrivals)
    }
    defer { for child in children { child.finish() } }
    for child in children { try child.waitUntilReady() }
    (ours.subscribers, raw.subscribers) = (1, 1)
    ours.head = try store.bounds().head.value
    ours.write = { index in
      let entry =
        index.isMultiple(of: 2) ? try store.blocking.logIn(as: "alice") : try store.blocking.logOut()
      guard let entry else { throw BenchError("write \(index) through the store changed nothing") }
      return entry.cursor.value
    }
    let rawWriter = RawPQWriter(try schemas.rawConnection())
    raw.head = try rawWriter.connection.integer("SELECT head FROM session WHERE id = 1")
    raw.write = { index in
      guard let head = try rawWriter.write(login: index.isMultiple(of: 2)) else {
        throw BenchError("raw write \(index) changed nothing")
      }
      return head
    }
    let (oursSample, rawSample) = try DeliverScenario.alternate(
      &ours, &raw, count: scale.deliveries, rounds: scale.rounds)
    let ratio = oursSample.p50 / rawSample.p50
    return Outcome(
      measurements: Measurement.latency("pg-deliver-remote", ours: oursSample, baseline: rawSample),
      verdicts: [
        Verdict(
          scenario: "pg-deliver-remote", aim: "p50 ≤ 1.5× raw", measured: String(format: "p50 %.2f×", ratio),
          met: ratio <= 1.5)
      ])
  }
}
