import SessionStorage

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension SessionStore {
  /// How a store on PostgreSQL connects.
  public struct PostgresOptions: Sendable {
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

  /// Connects to the store on PostgreSQL at `url`, creating its schema and tables and
  /// applying pending migrations (unless ``PostgresOptions/readOnly``).
  ///
  /// A store on PostgreSQL serves several machines sharing one session: the same contract
  /// as a file (its feed's promises included), in one schema of a server.
  ///
  /// Opened from a URL, `postgresql://user@host:5432/db?schema=front_desk` (or
  /// `postgres://`); the `schema` parameter (default `public`) names the schema that holds
  /// the store's tables, so several stores share a server. Passwords come from libpq's usual
  /// places (`PGPASSFILE`, `~/.pgpass`, `PGPASSWORD`) or the URL, and are never printed:
  /// ``SessionStore/postgres`` and every error carry the URL with its password replaced by `***`.
  ///
  /// The store holds a writer and a reader connection and, while anyone
  /// subscribes, a `LISTEN` connection whose notifications wake subscribers; see
  /// <doc:GaplessCursors> for why cursors stay gapless and in commit order.
  ///
  /// - Throws: `SessionStorageError`: `invalidOrigin` (before connecting),
  ///   `invalidArgument` for a URL that is not `postgresql://…` or a bad schema name,
  ///   `unavailable` when the server cannot be reached, `refused` when it turns the login
  ///   away (no such database or role, `NOLOGIN`, a wrong password), `permissionDenied` when
  ///   the role may not use the schema, `foreignDatabase` for a schema with someone else's tables,
  ///   `newerSchema`, `checksumMismatch`, `tamperedSchema` for a schema whose functions were
  ///   changed by hand or that was renamed (a read-only store opens, and every read but
  ///   `check()` throws it); for a read-only store, `notFound` (no store in the
  ///   schema) or `needsMigration`. Nothing is changed when it throws.
  public convenience init(postgresURL url: String, options: PostgresOptions = PostgresOptions()) throws {
    self.init(backend: try PostgresBackend(url: url, options: options))
  }

  /// The PostgreSQL schema this store keeps its session in; nil for a store in a file or in
  /// memory.
  public var postgres: PostgresLocation? {
    (backend as? PostgresBackend).map { PostgresLocation(url: $0.server.described, schema: $0.server.schema) }
  }

  /// ``postgres``, for code that opened the store on a server.
  /// - Throws: `invalidArgument` for a store in a file or in memory.
  package func requirePostgres() throws(SessionStorageError) -> PostgresLocation {
    guard let postgres else {
      throw SessionStorageError(.invalidArgument, "the store at \(backend.place) is not on PostgreSQL")
    }
    return postgres
  }
}

/// Where a store on PostgreSQL is (``SessionStorage/SessionStore/postgres``).
public struct PostgresLocation: Sendable, Hashable {
  /// The store's URL, its password replaced by `***`.
  public let url: String
  /// The schema that holds the store's tables.
  public let schema: String

  /// `url` with every password libpq would read from it (in the user part, raw or
  /// percent-encoded, or a `password` parameter; or the `password` of a key/value string)
  /// replaced by `***`: what a store prints of its URL.
  public static func redacted(_ url: String) -> String { PostgresPasswords.redacted(url) }

  /// Whether `text` names a PostgreSQL database rather than a file: it begins with
  /// `postgresql://` or `postgres://`, in any case (as `sessionctl --db` tells them apart).
  package static func isURL(_ text: String) -> Bool {
    let lowered = text.lowercased()
    return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
  }
}
