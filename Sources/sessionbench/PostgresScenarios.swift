import Foundation
import SessionStorage
import SessionStoragePostgres
import Synchronization
import ToolingKit

/// `pg-write`, `pg-read`, `pg-deliver-remote`: a store on PostgreSQL against raw libpq
/// doing the same statements, on the server of ``PostgresServer``, each scenario in fresh
/// schemas of its own (``PostgresSchemas``). `pg-write-100`, `pg-read-100`,
/// `pg-deliver-remote-100`: the same with 100 accounts in the roster (``Roster``: the 99
/// others join ours through the store and the baseline's schema through ``RawPQWriter``
/// before anything is timed).
enum PostgresScenarios {
  /// The `pg-*` scenarios, in the order of ``Scenarios/names``.
  static let names = Scenarios.names.filter { $0.hasPrefix("pg-") }

  static func run(_ name: String, scale: Scale, server: PostgresServer) throws -> Outcome {
    let schemas = try PostgresSchemas(server: try server.url())
    let accounts = name.hasSuffix("-100") ? 100 : 1
    switch name {
    case "pg-write", "pg-write-100": return try write(name, schemas, accounts: accounts, scale: scale)
    case "pg-read", "pg-read-100": return try read(name, schemas, accounts: accounts, scale: scale)
    default: return try deliverRemote(name, schemas, accounts: accounts, scale: scale)
    }
  }

  /// Our store and the baseline's writer, with `accounts` in each roster.
  private static func sides(_ schemas: PostgresSchemas, accounts: Int) throws -> (SessionStore, RawPQWriter) {
    let store = try schemas.store()
    let raw = RawPQWriter(try schemas.rawConnection())
    try Roster.populate(store, raw, accounts: accounts)
    return (store, raw)
  }

  /// `pg-write`, `pg-write-100`: `logIn(as:)`/`logOut()` alternating through the store
  /// (BEGIN, the claim of `session_writer`, the planner's reads, the change of `accounts`,
  /// reading the entry back, COMMIT) against ``RawPQWriter`` (the same statements, decided
  /// and run without the Swift layers).
  private static func write(_ name: String, _ schemas: PostgresSchemas, accounts: Int, scale: Scale) throws
    -> Outcome
  {
    let (store, raw) = try sides(schemas, accounts: accounts)
    return try WriteScenario.alternating(
      name, scale: scale,
      ours: { login in try (login ? store.blocking.logIn(as: "alice") : store.blocking.logOut()) != nil },
      raw: { login in try raw.write(login: login) != nil })
  }

  /// `pg-read`, `pg-read-100`: `store.state` against the store's SELECT of the active
  /// account's state and the head with `PQexecPrepared`, looking at its four columns, once
  /// `alice` is signed in and active. No aim: reported only.
  private static func read(_ name: String, _ schemas: PostgresSchemas, accounts: Int, scale: Scale) throws
    -> Outcome
  {
    let (store, writer) = try sides(schemas, accounts: accounts)
    try store.blocking.logIn(as: "alice")
    try writer.write(login: true)
    let raw = writer.connection
    let (ours, baseline) = try Paired.blocks(
      rounds: scale.rounds, block: scale.readBlock, warmup: 200,
      ours: { _ in
        _ = try store.state
      },
      raw: { _ in
        let rows = try raw.query(RawPQReads.snapshotSQL) { result in
          RawPQReads.readRows(result, raw.libpq)
          return raw.libpq.PQntuples(result)
        }
        guard rows == 1 else { throw BenchError("the session_writer or active_account row is missing") }
      })
    return Outcome(measurements: Measurement.latency(name, ours: ours, baseline: baseline))
  }

  /// `pg-deliver-remote`, `pg-deliver-remote-100`: the store writes, a subscriber in another
  /// process (`child-pg-subscriber`: a store and `changes(from: .now)`) reports each entry;
  /// the baseline writes with ``RawPQWriter`` and a raw `LISTEN` loop in another process
  /// (`child-pg-raw-listener`) reports each row. Timed as `deliver-remote`.
  private static func deliverRemote(_ name: String, _ schemas: PostgresSchemas, accounts: Int, scale: Scale)
    throws -> Outcome
  {
    let (store, rawWriter) = try sides(schemas, accounts: accounts)
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
    raw.head = try rawWriter.connection.integer("SELECT head FROM session_writer WHERE id = 1")
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
      measurements: Measurement.latency(name, ours: oursSample, baseline: rawSample),
      verdicts: [
        Verdict(
          scenario: name, aim: "p50 ≤ 1.5× raw", measured: String(format: "p50 %.2f×", ratio),
          met: ratio <= 1.5)
      ])
  }
}

extension Roster {
  /// The others join `store` and, through `raw`'s write (the store's statements), the
  /// baseline's schema.
  static func populate(_ store: SessionStore, _ raw: RawPQWriter, accounts: Int) throws {
    try populate(store, accounts: accounts) { try raw.write($0) != nil }
  }
}

/// A `pg-*` scenario's scratch space on the server: two fresh schemas, one for our store and
/// one for the baseline, so that a listener on one channel never wakes for the other's
/// writes. Both get the store's schema by opening a store on them (the
/// migrations); after that only raw libpq calls touch the baseline's. Both are dropped
/// (`DROP SCHEMA … CASCADE`) when this is dropped.
final class PostgresSchemas {
  /// The server, without a `schema` parameter.
  let server: String
  /// Our store's schema.
  let ours: String
  /// The baseline's schema.
  let raw: String
  /// The connection that drops the schemas, opened first: an unreachable server fails here.
  private let admin: RawPQ

  init(server: String) throws {
    self.server = server
    admin = try RawPQ(url: server)
    let tag = String((0..<8).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    ours = "sessionbench_\(tag)_ours"
    raw = "sessionbench_\(tag)_raw"
    // Dropped by deinit, which also runs when this throws.
    _ = try SessionStore(postgresURL: Self.url(server, schema: raw), options: .init(origin: "sessionbench"))
  }

  deinit {
    do {
      try admin.exec(
        "DROP SCHEMA IF EXISTS \(RawPQ.quoted(ours)) CASCADE; DROP SCHEMA IF EXISTS \(RawPQ.quoted(raw)) CASCADE"
      )
    } catch {
      SessionBench.warn("sessionbench: could not drop the schemas \(ours) and \(raw): \(error)")
    }
  }

  /// The URL of the store in `schema` on `server`.
  static func url(_ server: String, schema: String) -> String {
    server + (server.contains("?") ? "&" : "?") + "schema=" + schema
  }

  /// Our store's URL.
  var oursURL: String { Self.url(server, schema: ours) }

  func store(origin: String = "sessionbench") throws -> SessionStore {
    try SessionStore(postgresURL: oursURL, options: .init(origin: origin))
  }

  /// A raw connection with `search_path` set to the baseline's schema.
  func rawConnection() throws -> RawPQ { try RawPQ(url: server, schema: raw) }
}

/// The PostgreSQL server of the `pg-*` scenarios: the one `--postgres URL` or
/// `$SESSIONBENCH_POSTGRES_URL` names, or else a throwaway ``PostgresCluster`` started on
/// first use (when sessionbench runs from its checkout and PostgreSQL is installed), shared
/// by the run's `pg-*` scenarios and stopped by ``stop()``. Each scenario makes its own
/// schemas on it (``PostgresSchemas``).
final class PostgresServer: Sendable {
  /// The environment variable that names a server when `--postgres` does not.
  static let environmentVariable = "SESSIONBENCH_POSTGRES_URL"

  /// Why there is no server: the `pg-*` scenarios cannot run. A full run skips them,
  /// saying so; a run that names one of them fails with this.
  struct Unavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String {
      "no PostgreSQL server: \(reason). Give one with --postgres postgresql://user@host:5432/db or "
        + "$\(PostgresServer.environmentVariable) (each scenario makes and drops schemas of its own there)"
    }
  }

  private enum State {
    case given(String)
    case notStarted
    case started(PostgresCluster)
    case failed(String)
    case invalid(String)
    case stopped
  }

  private let state: Mutex<State>

  /// A server at `url` (from `--postgres` or ``fromEnvironment()``), or (nil) a throwaway
  /// cluster started on first use. A `url` with a ``problem(with:)`` fails every `pg-*`
  /// scenario, also in a full run, saying why.
  init(url: String?) {
    guard let url else {
      state = Mutex(.notStarted)
      return
    }
    state = Mutex(
      Self.problem(with: url).map { .invalid("$\(Self.environmentVariable): \($0)") } ?? .given(url))
  }

  /// `$SESSIONBENCH_POSTGRES_URL`, when set and not empty.
  static func fromEnvironment() -> String? {
    ProcessInfo.processInfo.environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
  }

  /// What is wrong with `url` as a server for the scenarios, or nil: it must be a
  /// PostgreSQL URL without a `schema` parameter (each scenario names its own schemas).
  static func problem(with url: String) -> String? {
    let shown = PostgresLocation.redacted(url)
    guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
      return "'\(shown)' is not a PostgreSQL URL: give postgresql://user@host:5432/db"
    }
    let parameters = url.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&") ?? []
    guard !parameters.contains(where: { $0 == "schema" || $0.hasPrefix("schema=") }) else {
      return "'\(shown)' names a schema: give the server's URL alone (each scenario makes and drops "
        + "schemas of its own)"
    }
    return nil
  }

  /// The server's URL, without a `schema` parameter; starts the throwaway cluster on first use.
  /// - Throws: ``Unavailable`` when there is no server and none can be started.
  func url() throws -> String {
    try state.withLock { state in
      switch state {
      case .given(let url): return url
      case .started(let cluster): return cluster.url
      case .failed(let reason): throw Unavailable(reason: reason)
      case .invalid(let problem): throw BenchError(problem)
      case .stopped: throw Unavailable(reason: "the throwaway cluster was stopped")
      case .notStarted:
        SessionBench.warn(
          "sessionbench: starting a throwaway PostgreSQL server with scripts/postgres-cluster")
        do {
          let cluster = try PostgresCluster.start(prefix: "sessionbench")
          state = .started(cluster)
          return cluster.url
        } catch {
          state = .failed("\(error)")
          throw Unavailable(reason: "\(error)")
        }
      }
    }
  }

  /// Stops the throwaway cluster, if one was started, and removes its directory.
  func stop() {
    let cluster = state.withLock { state -> PostgresCluster? in
      guard case .started(let cluster) = state else { return nil }
      state = .stopped
      return cluster
    }
    do {
      try cluster?.stop()
    } catch {
      SessionBench.warn("sessionbench: the throwaway PostgreSQL server did not stop: \(error)")
    }
  }
}
