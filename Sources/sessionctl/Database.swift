import Foundation
import SessionStorage
import SessionStoragePostgres

/// Where the database is, and why there: `--db`, else `$SESSIONCTL_DB`, else the
/// library's ``SessionStore/defaultPath(environment:)`` (the file apps use by default).
/// A `postgresql://` or `postgres://` URL names a PostgreSQL database instead of a file.
struct DatabaseLocation: Sendable, Equatable {
  /// Which rule chose the path.
  enum Source: Sendable, Equatable {
    /// `--db PATH`.
    case option
    /// `$SESSIONCTL_DB`.
    case environment
    /// The library's default location, whose directory the first write creates (mode 0700).
    case dataHome
  }

  /// The database file, or the PostgreSQL URL as given (with any password: never print
  /// it; print ``display``).
  var path: String
  /// Which rule chose it.
  var source: Source

  /// Whether ``path`` is a PostgreSQL URL rather than a file.
  var isPostgres: Bool {
    let lowered = path.lowercased()
    return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
  }

  /// The path, or the URL with its password replaced: what output and errors show. (A
  /// libpq key/value string taken for a file path has its password replaced too.)
  var display: String { PostgresSessionStore.redacted(path) }

  /// Refuses a PostgreSQL URL for a command that works on a SQLite file.
  /// - Throws: ``CLIError`` (exit 1) naming the command and what to use instead.
  func requireFile(for command: String, instead: String) throws(CLIError) {
    guard isPostgres else { return }
    throw CLIError(
      .failure, "'\(command)' works on a SQLite file, and \(display) is a PostgreSQL database: \(instead)")
  }

  /// Applies the rules. An empty `--db` is an error; an empty `$SESSIONCTL_DB` counts as unset.
  /// - Throws: ``CLIError`` for an empty `--db`, or when no rule gives a path.
  static func resolve(option: String?, environment: [String: String]) throws(CLIError) -> DatabaseLocation {
    if let option {
      guard !option.isEmpty else { throw .invalidInput("the database path given to '--db' is empty") }
      return DatabaseLocation(path: option, source: .option)
    }
    if let path = environment["SESSIONCTL_DB"], !path.isEmpty {
      return DatabaseLocation(path: path, source: .environment)
    }
    do {
      return DatabaseLocation(path: try SessionStore.defaultPath(environment: environment), source: .dataHome)
    } catch {
      throw CLIError(.failure, "no database path: pass '--db PATH' or set SESSIONCTL_DB (\(error.message))")
    }
  }

  /// For the default location, which nobody named on purpose: throws unless only this
  /// user (and root) can change the directories that lead to it
  /// (``SessionStore/requirePrivateDirectory(for:creatingMissing:)``), creating the missing
  /// ones first when `creating`. A path given with `--db` or `$SESSIONCTL_DB` is used as
  /// given: naming it is the decision to trust it.
  /// - Throws: ``SessionStorageError`` (`unsafeDirectory` says to pass `--db` instead).
  func requirePrivateDirectory(creating: Bool) throws {
    guard source == .dataHome, !isPostgres else { return }
    do {
      try SessionStore.requirePrivateDirectory(for: path, creatingMissing: creating)
    } catch {
      guard error.code == .unsafeDirectory else { throw error }
      throw SessionStorageError(
        error.code, error.message + " (or name the file with --db PATH)", path: error.path)
    }
  }

  /// Whether the file exists (as anything: SessionStore refuses what is not a database).
  /// A PostgreSQL database counts as existing: opening it read-only says when its schema
  /// is missing.
  var exists: Bool {
    if isPostgres { return true }
    var info = stat()
    return lstat(path, &info) == 0
  }
}

/// What sessionctl administers through one contract, whichever backs it: a SQLite file
/// (``SessionStore``) or a PostgreSQL schema (`PostgresSessionStore`). Every command but `backup`, `restore` and
/// `retention` (which work on a file) uses only this.
protocol AdministeredStore: SessionRepository {
  /// The migrations this open applied (empty when the schema was up to date).
  var appliedMigrations: [Migration] { get }
  /// Every verification, one result each.
  func check() throws -> [CheckResult]
}

extension SessionStore: AdministeredStore {}
extension PostgresSessionStore: AdministeredStore {}

extension CommandContext {
  /// The database: `--db`, else `$SESSIONCTL_DB`, else the default location.
  /// - Throws: ``CLIError`` when none of them gives a path.
  func location() throws(CLIError) -> DatabaseLocation {
    try DatabaseLocation.resolve(option: options.db, environment: environment)
  }

  /// Opens the database without writing; a missing file (or PostgreSQL schema) is an
  /// error, and nothing is created.
  func openForReading(_ location: DatabaseLocation) throws -> any AdministeredStore {
    if location.isPostgres {
      return try PostgresSessionStore(
        url: location.path, options: .init(origin: SessionCtl.origin, readOnly: true))
    }
    return try openFileForReading(location)
  }

  /// Opens the database for writing, creating it (and the default directory, or the
  /// PostgreSQL schema) when missing.
  func openForWriting(_ location: DatabaseLocation) throws -> any AdministeredStore {
    if location.isPostgres {
      return try PostgresSessionStore(url: location.path, options: .init(origin: SessionCtl.origin))
    }
    return try openFileForWriting(location)
  }

  /// Opens the SQLite file without writing, for the commands that work on a file. The
  /// default location is refused when others may change its directories.
  func openFileForReading(_ location: DatabaseLocation) throws -> SessionStore {
    try location.requirePrivateDirectory(creating: false)
    return try SessionStore(path: location.path, options: .init(origin: SessionCtl.origin, readOnly: true))
  }

  /// Opens the SQLite file for writing, for the commands that work on a file. The default
  /// location's directories are created (mode 0700), and refused when others may change them.
  func openFileForWriting(_ location: DatabaseLocation) throws -> SessionStore {
    try location.requirePrivateDirectory(creating: true)
    return try SessionStore(
      path: location.path,
      options: .init(origin: SessionCtl.origin, createsMissingDirectories: location.source == .dataHome))
  }
}
