import SessionStorage
import SessionStoragePostgres
import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where the database is, and why there: the library's ``SessionStore/Location``, which an
/// app resolves the same way (`--db`, else `$SESSIONCTL_DB`, else the default path). A
/// `postgresql://` or `postgres://` URL names a PostgreSQL database instead of a file.
extension SessionStore.Location {
  /// The path, or the URL with its password replaced: what output and errors show. (A
  /// libpq key/value string taken for a file path has its password replaced too.)
  var display: String { PostgresLocation.redacted(path) }

  /// Whether ``path`` is a PostgreSQL URL (`postgresql://` or `postgres://`, in any case)
  /// rather than a file.
  var isPostgres: Bool { PostgresLocation.isURL(path) }

  /// Refuses a PostgreSQL URL for a command that works on a SQLite file.
  /// - Throws: ``CLIError`` (exit 1) naming the command and what to use instead.
  func requireFile(for command: String, instead: String) throws(CLIError) {
    guard isPostgres else { return }
    throw CLIError(
      .failure, "'\(command)' works on a SQLite file, and \(display) is a PostgreSQL database: \(instead)")
  }

  /// Applies the library's rules to `--db` and the environment. An empty `--db` is an
  /// error; an empty `$SESSIONCTL_DB` counts as unset. A file path that begins with `~` and
  /// leads to nothing is refused: the user meant a home directory, which only a shell
  /// expands.
  /// - Throws: ``CLIError`` for an empty `--db`, a variable a rule reads that is not UTF-8
  ///   (both exit 65), a `~` path that leads to nothing, or when no rule gives a path.
  static func resolve(option: String?, environment: [String: String]) throws(CLIError) -> Self {
    let location: Self
    do {
      location = try resolve(named: option, environment: environment)
    } catch let error where error.code == .invalidArgument {
      // An empty --db, or a variable a rule reads that is not UTF-8 (exit 65, as such bytes
      // in an argument are).
      throw .invalidInput(option == "" ? "the database path given to '--db' is empty" : error.message)
    } catch {
      throw CLIError(.failure, "no database path: pass '--db PATH' or set SESSIONCTL_DB (\(error.message))")
    }
    try location.requireNoUnexpandedTilde()
    return location
  }

  /// Throws for a file path that begins with `~` (`--db '~/s.db'`, `SESSIONCTL_DB='~/s.db'`)
  /// when nothing is there: sessionctl uses a path as given, so `~` would name a directory
  /// `~` in the current directory, not the home directory. Something that exists there is
  /// used as given.
  /// - Throws: ``CLIError`` (exit 1) that says so and what to write instead.
  func requireNoUnexpandedTilde() throws(CLIError) {
    guard path.hasPrefix("~"), !isPostgres, !exists else { return }
    let rule = source == .environment ? "$SESSIONCTL_DB" : "--db"
    throw CLIError(
      .failure,
      "\(path): no such file, and sessionctl does not expand '~' in \(rule) (a shell expands it only "
        + "unquoted at the start of a word): write \"$HOME/…\" instead, or './~…' for a name that begins "
        + "with '~'; nothing was created")
  }

  /// `error`, its message pointing to `--db` when it refuses the default location's
  /// directory.
  static func suggestingOption(_ error: SessionStorageError) -> SessionStorageError {
    guard error.code == .unsafeDirectory else { return error }
    return SessionStorageError(
      error.code, error.message + " (or name the file with --db PATH)", path: error.path)
  }

  /// Whether the file exists (as anything: SessionStore refuses what is not a database).
  /// A PostgreSQL database counts as existing: opening it read-only says when its schema
  /// is missing.
  var exists: Bool {
    if isPostgres { return true }
    return (try? FileStatus(path, followingLinks: false)) != nil
  }
}

extension CommandContext {
  /// The database: `--db`, else `$SESSIONCTL_DB`, else the default location.
  /// - Throws: ``CLIError`` when none of them gives a path.
  func location() throws(CLIError) -> SessionStore.Location {
    try SessionStore.Location.resolve(option: options.db, environment: environment)
  }

  /// Opens the database without writing; a missing file (or PostgreSQL schema) is an
  /// error, and nothing is created.
  func openForReading(_ location: SessionStore.Location) throws -> SessionStore {
    if location.isPostgres {
      return try SessionStore(
        postgresURL: location.path, options: .init(origin: SessionCtl.origin, readOnly: true))
    }
    return try openFileForReading(location)
  }

  /// Opens the database for writing, creating it (and the default directory, or the
  /// PostgreSQL schema) when missing.
  func openForWriting(_ location: SessionStore.Location) throws -> SessionStore {
    if location.isPostgres {
      return try SessionStore(postgresURL: location.path, options: .init(origin: SessionCtl.origin))
    }
    return try openFileForWriting(location)
  }

  /// Opens the SQLite file without writing, for the commands that work on a file, as the
  /// library opens a location: the default location is refused when others may change its
  /// directories.
  func openFileForReading(_ location: SessionStore.Location) throws -> SessionStore {
    try openFile(location, .init(origin: SessionCtl.origin, readOnly: true))
  }

  /// Opens the SQLite file for writing, for the commands that work on a file, as the
  /// library opens a location: the default location's directories are created (mode 0700),
  /// and refused when others may change them.
  func openFileForWriting(_ location: SessionStore.Location) throws -> SessionStore {
    try openFile(location, .init(origin: SessionCtl.origin))
  }

  private func openFile(_ location: SessionStore.Location, _ options: SessionStore.FileOptions) throws
    -> SessionStore
  {
    do {
      return try SessionStore(location: location, options: options)
    } catch let error as SessionStorageError {
      throw SessionStore.Location.suggestingOption(error)
    }
  }
}
