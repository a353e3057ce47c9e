import FeedKit
import Foundation
import SessionStorage
import Synchronization

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
public final class PostgresSessionStore: SessionRepository, Sendable {
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
  let feed: Feed<SessionChange, SessionState>
  /// Where `async` writes wait for the writer, off their callers' actors.
  private let writeQueue = DispatchQueue(label: "SessionStoragePostgres.write")

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
      log = PostgresLog(reader: first, refusal: refusal)
    } else {
      if let refusal { throw refusal }
      writer = Mutex(first)
      log = PostgresLog(reader: try PQConnection(place, role: .reader, readOnly: true), refusal: nil)
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

  /// The current state.
  public var state: SessionState {
    get throws { try log.snapshot().state }
  }

  /// The state and the cursor of the newest change it includes, read in one statement.
  public func snapshot() throws -> SessionSnapshot { try feed.snapshot() }

  /// A live subscription to every change after `start`, once, in commit order, as it
  /// commits (from this store, other stores and `psql`).
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try feed.changes(from: start)
  }

  /// The state and its cursor, read in one statement, then every change after it.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription { try feed.snapshotAndChanges() }

  /// The state now, then each new state; consecutive equal states are dropped.
  public func values() -> SessionValues { feed.values() }

  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try feed.checkedHistory(from: start, limit: limit)
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() throws -> FeedBounds { try log.bounds() }

  // MARK: Writes

  /// Signs in as `username` (validated, stored in NFC). Blocks the calling thread until
  /// the server confirms the commit; from an actor, use the `async` variant.
  /// - Returns: the committed change, or nil when already signed in as that user.
  /// - Throws: `SessionStorageError` (`invalidUsername` before anything is written;
  ///   `unavailable` when the connection is lost, saying whether anything was written;
  ///   `busy` when another transaction held the session row longer than
  ///   ``Options/lockTimeout``: nothing was written).
  @discardableResult
  public func logIn(as username: String) throws -> SessionEntry? { try write(try .login(username: username)) }

  /// Signs out, keeping the username. Blocks like the synchronous `logIn(as:)`.
  /// - Returns: the committed change, or nil when nobody was signed in.
  @discardableResult
  public func logOut() throws -> SessionEntry? { try write(.logout) }

  /// Changes the username, keeping the login state. Blocks like the synchronous `logIn(as:)`.
  /// - Returns: the committed change, or nil when the username is already `username`.
  @discardableResult
  public func rename(to username: String) throws -> SessionEntry? { try write(try .rename(to: username)) }

  /// Signs in as `username`, off the caller's actor. A task cancelled before the write
  /// starts throws `CancellationError` (after the username's validation) and writes
  /// nothing; a write that started runs to its end.
  @discardableResult
  public func logIn(as username: String) async throws -> SessionEntry? {
    try await queued(try .login(username: username))
  }

  /// Signs out, off the caller's actor (see the `async` `logIn(as:)`).
  @discardableResult
  public func logOut() async throws -> SessionEntry? { try await queued(.logout) }

  /// Changes the username, off the caller's actor (see the `async` `logIn(as:)`).
  @discardableResult
  public func rename(to username: String) async throws -> SessionEntry? {
    try await queued(try .rename(to: username))
  }

  /// Runs the write on the write queue, so the blocking libpq call never holds a thread of
  /// the cooperative pool.
  private func queued(_ write: SessionWrite) async throws -> SessionEntry? {
    try Task.checkCancellation()
    return try await withCheckedThrowingContinuation { continuation in
      writeQueue.async { continuation.resume(with: Result { try self.write(write) }) }
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

  private func write(_ write: SessionWrite) throws -> SessionEntry? {
    let token = String(Int64.random(in: 1...Int64.max))
    let entry = try withWriter { connection in
      try PostgresWrite(write: write, origin: options.origin, token: token).commit(on: connection)
    }
    if entry != nil { beacon.signal() }  // this process's subscribers need no NOTIFY round trip
    return entry
  }
}
