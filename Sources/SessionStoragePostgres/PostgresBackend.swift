import Dispatch
import FeedKit
import SessionStorage
import Synchronization
internal import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The PostgreSQL backend of ``SessionStore``: a writer and a reader connection to one
/// schema, and a `LISTEN` connection while anyone subscribes.
final class PostgresBackend: SessionBackend {
  /// The options it was opened with.
  let options: SessionStore.PostgresOptions
  /// The migrations this open applied (empty when the schema was up to date).
  let appliedMigrations: [Migration]

  /// The server, database and schema of the store, from its URL.
  let server: PostgresPlace
  /// The writer connection; nil for a read-only store.
  private let writer: Mutex<PQConnection?>
  let log: PostgresLog
  /// Wakes subscribers: this store's writes, and the `LISTEN` connection for everyone's.
  let beacon: Beacon
  let feed: Feed<SessionChange, SessionState>
  private let queue = DispatchQueue(label: "SessionStoragePostgres.write")

  /// Connects to the store at `url` (see ``SessionStore/init(postgresURL:options:)``).
  init(url: String, options: SessionStore.PostgresOptions) throws {
    try Origin.validate(options.origin)
    self.options = options
    let place = try PostgresPlace(
      url: url, connectTimeout: options.connectTimeout, lockTimeout: options.lockTimeout,
      origin: options.origin)
    self.server = place
    let first = try PQConnection(
      place, role: options.readOnly ? .reader : .writer, readOnly: options.readOnly)
    appliedMigrations = try PostgresMigrator.open(first, readOnly: options.readOnly)
    // A schema changed by hand is refused for writing; a read-only store keeps the refusal
    // so that `check()` can report it, and every other read throws it (as on SQLite).
    let refusal = try PostgresSchema.refusal(on: first)
    if options.readOnly {
      writer = Mutex(nil)
      log = PostgresLog(reader: first, refusal: refusal, poolerRefusalGrace: options.poolerRefusalGrace)
    } else {
      if let refusal { throw refusal }
      let reader: PQConnection
      do {
        reader = try PQConnection(place, role: .reader, readOnly: true)
      } catch let error as SessionStorageError where error.code == .unavailable {
        throw first.connectionLimitRefusal(needing: 2) ?? error
      }
      writer = Mutex(first)
      log = PostgresLog(reader: reader, refusal: nil, poolerRefusalGrace: options.poolerRefusalGrace)
    }
    let listener = PostgresListener(place: place, pollInterval: options.safetyPollInterval)
    beacon = Beacon(activate: { listener.start($0) }, deactivate: { listener.stop() })
    feed = Feed(source: log, signal: beacon)
  }

  func currentState() throws -> SessionState { try log.snapshot().state }

  func roster() throws -> SessionRoster { try log.roster() }

  var place: String { server.described }

  var origin: String { options.origin }

  var isReadOnly: Bool { options.readOnly }

  /// The store's write queue: `async` writes wait there for the writer connection, so the
  /// blocking libpq calls never hold a thread of the cooperative pool.
  var writeQueue: DispatchQueue? { queue }

  /// Runs the write in one transaction (``PostgresWrite``). A write that started runs to
  /// its end: libpq's round trips are not interrupted, so `isCancelled` is not asked.
  /// Errors: `unavailable` when the connection is lost, saying whether anything was
  /// written; `busy` when another transaction held the store's lock (the `session_writer`
  /// row) longer than ``Options/lockTimeout`` (nothing was written).
  func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let token = String(Int64.random(in: 1...Int64.max))
    let outcome = try withWriter { connection in
      try PostgresWrite(write: write, origin: options.origin, token: token).commit(on: connection)
    }
    if outcome.entry != nil { beacon.signal() }  // this process's subscribers need no NOTIFY round trip
    return outcome
  }

  /// The DELETE of each compaction, in a transaction; the head stays in `session_writer`,
  /// so cursors are never reused.
  func delete(_ deletion: Deletion) throws -> CompactionResult {
    switch deletion {
    case .keepingLast(let count):
      try maintain(
        "DELETE FROM ONLY session_changes WHERE seq <= "
          + "(SELECT seq FROM ONLY session_changes ORDER BY seq DESC LIMIT 1 OFFSET $1)",
        [String(count)])
    case .before(let cursor):
      try maintain("DELETE FROM ONLY session_changes WHERE seq < $1", [String(cursor.value)])
    case .olderThan(let age):
      // Clamped to about 3,000 years: further back than that is before every entry, and
      // stays within timestamptz's range.
      try maintain(
        """
        DELETE FROM ONLY session_changes WHERE seq <= coalesce(
          (SELECT seq FROM ONLY session_changes WHERE at >= clock_timestamp() - $1::bigint * interval '1 millisecond'
           ORDER BY seq LIMIT 1) - 1,
          (SELECT max(seq) FROM ONLY session_changes))
        """, [String(min(age.milliseconds, 100_000_000_000_000))])
    }
  }

  /// Runs a DELETE on the feed in a transaction and returns what it removed and the bounds
  /// afterwards.
  private func maintain(_ sql: String, _ values: [String?]) throws -> CompactionResult {
    try withWriter { connection in
      try connection.begin()
      do {
        let removed = try connection.query(sql, values).changed
        let bounds = try connection.query(PostgresTables.boundsSQL).rows.first.map(PostgresTables.bounds)
        try connection.execute("COMMIT")
        return CompactionResult(removed: removed, bounds: bounds ?? FeedBounds(oldest: nil, head: .zero))
      } catch {
        if !connection.isBroken { try? connection.execute("ROLLBACK") }
        throw error
      }
    }
  }

  /// Runs `body` on the writer connection (connected again first if it was lost).
  func withWriter<Result: Sendable>(_ body: (PQConnection) throws -> Result) throws -> Result {
    try writer.withLock { connection in
      guard let connection else {
        throw SessionStorageError.openedReadOnly(server.described)
      }
      if connection.isBroken { try connection.reconnect() }
      return try body(connection)
    }
  }
}
