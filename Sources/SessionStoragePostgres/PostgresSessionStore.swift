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

/// The session store on PostgreSQL, for several machines sharing one session: the same
/// contract as `SessionStore` (its feed's promises included), in one schema of a server.
///
/// Opened from a URL, `postgresql://user@host:5432/db?schema=front_desk` (or
/// `postgres://`); the `schema` parameter (default `public`) names the schema that holds
/// the store's tables, so several stores share a server. Passwords come from libpq's usual
/// places (`PGPASSFILE`, `~/.pgpass`, `PGPASSWORD`) or the URL, and are never printed:
/// ``url`` and every error carry the URL with its password replaced by `***`.
///
/// A store is `Sendable`. It holds a writer and a reader connection and, while anyone
/// subscribes, a `LISTEN` connection whose notifications wake subscribers; see
/// <doc:GaplessCursors> for why cursors stay gapless and in commit order.
public final class PostgresSessionStore: _SessionBackedStore, SessionBackend {
  /// How a store connects.
  public struct Options: Sendable {
    /// The origin recorded on this store's writes; `external` is reserved. The server shows
    /// the store's connections as `<origin>/writer`, `<origin>/reader` and
    /// `<origin>/listener` (`application_name`), unless the URL sets a name of its own.
    public var origin: String
    /// Connect without writing: no creation, no migration, no writes.
    public var readOnly: Bool
    /// How often subscribers re-read the log when no notification came: the safety net
    /// behind `LISTEN`, which covers a lost notification.
    public var safetyPollInterval: Duration
    /// How long a connection attempt may take (libpq's `connect_timeout`, in whole
    /// seconds, at least 1); a URL's own `connect_timeout` wins.
    public var connectTimeout: Duration
    /// How long a write waits for the session row while another transaction holds it (a
    /// `psql` session left open, a long transaction) before it fails with `busy` and writes
    /// nothing: PostgreSQL's `lock_timeout` on the store's connections, in milliseconds, as
    /// `busyTimeout` is for the SQLite store; `.zero` waits for as long as the row is held.
    public var lockTimeout: Duration
    /// How long a running store takes a connection pooler's refusal of its reader's login
    /// (SQLSTATE `08P01`) for one that passes before its subscriptions end with it.
    package var poolerRefusalGrace: Duration = .seconds(60)

    /// Creates options; the origin defaults to the process's name.
    public init(
      origin: String = ProcessInfo.processInfo.processName, readOnly: Bool = false,
      safetyPollInterval: Duration = .seconds(1), connectTimeout: Duration = .seconds(5),
      lockTimeout: Duration = .seconds(5)
    ) {
      self.origin = origin
      self.readOnly = readOnly
      self.safetyPollInterval = safetyPollInterval
      self.connectTimeout = connectTimeout
      self.lockTimeout = lockTimeout
    }
  }

  /// The store's URL, its password replaced by `***`.
  public var url: String { place.described }
  /// The schema that holds the store's tables.
  public var schema: String { place.schema }
  /// The options it was opened with.
  public let options: Options
  /// The migrations this open applied (empty when the schema was up to date).
  public let appliedMigrations: [Migration]

  let place: PostgresPlace
  /// The writer connection; nil for a read-only store.
  private let writer: Mutex<PQConnection?>
  let log: PostgresLog
  /// Wakes subscribers: this store's writes, and the `LISTEN` connection for everyone's.
  let beacon: Beacon
  package let feed: Feed<SessionChange, SessionState>
  private let queue = DispatchQueue(label: "SessionStoragePostgres.write")

  /// Connects to the store at `url`, creating its schema and tables and applying pending
  /// migrations (unless ``Options/readOnly``).
  ///
  /// - Throws: `SessionStorageError`: `invalidOrigin` (before connecting),
  ///   `invalidArgument` for a URL that is not `postgresql://…` or a bad schema name,
  ///   `unavailable` when the server cannot be reached, `refused` when it turns the login
  ///   away (no such database or role, `NOLOGIN`, a wrong password), `permissionDenied` when
  ///   the role may not use the schema, `foreignDatabase` for a schema with someone else's tables,
  ///   `newerSchema`, `checksumMismatch`, `tamperedSchema` for a schema whose functions were
  ///   changed by hand or that was renamed (a read-only store opens, and every read but
  ///   ``check()`` throws it); for a read-only store, `notFound` (no store in the
  ///   schema) or `needsMigration`. Nothing is changed when it throws.
  public init(url: String, options: Options = Options()) throws {
    try Origin.validate(options.origin)
    self.options = options
    let place = try PostgresPlace(
      url: url, connectTimeout: options.connectTimeout, lockTimeout: options.lockTimeout,
      origin: options.origin)
    self.place = place
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

  /// `url` with every password libpq would read from it (in the user part, raw or
  /// percent-encoded, or a `password` parameter; or the `password` of a key/value string)
  /// replaced by `***`: what a store prints of its URL.
  public static func redacted(_ url: String) -> String { PostgresPasswords.redacted(url) }

  /// `url` without its passwords, for a child process (libpq then reads `~/.pgpass` or
  /// `PGPASSFILE`).
  package static func withoutPasswords(_ url: String) -> String { PostgresPasswords.withoutPasswords(url) }

  /// Whether `url` holds a password.
  package static func containsPassword(_ url: String) -> Bool { PostgresPasswords.containsPassword(url) }

  /// This store, as the shared public behaviour sees it.
  public var _core: _SessionStoreCore { _SessionStoreCore(self) }

  package func currentState() throws -> SessionState { try log.snapshot().state }

  package func requireWritable() throws {
    guard !options.readOnly else {
      throw SessionStorageError(.readOnly, "the store was opened read-only", path: place.described)
    }
  }

  /// The store's write queue: `async` writes wait there for the writer connection, so the
  /// blocking libpq calls never hold a thread of the cooperative pool.
  package var writeQueue: DispatchQueue? { queue }

  /// Runs the write in one transaction (``PostgresWrite``). A write that started runs to
  /// its end: libpq's round trips are not interrupted, so `isCancelled` is not asked.
  /// Errors: `unavailable` when the connection is lost, saying whether anything was
  /// written; `busy` when another transaction held the session row longer than
  /// ``Options/lockTimeout`` (nothing was written).
  package func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let token = String(Int64.random(in: 1...Int64.max))
    let outcome = try withWriter { connection in
      try PostgresWrite(write: write, origin: options.origin, token: token).commit(on: connection)
    }
    if outcome.entry != nil { beacon.signal() }  // this process's subscribers need no NOTIFY round trip
    return outcome
  }

  /// The DELETE of each compaction, in a transaction; the head stays in the session row,
  /// so cursors are never reused.
  package func delete(_ deletion: Deletion) throws -> CompactionResult {
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
        throw SessionStorageError(.readOnly, "the store was opened read-only", path: place.described)
      }
      if connection.isBroken { try connection.reconnect() }
      return try body(connection)
    }
  }
}
