import Foundation
import SessionStorage

/// Where the database file is, and why there: `--db`, else `$SESSIONCTL_DB`, else the
/// library's ``SessionStore/defaultPath(environment:)`` (the file apps use by default).
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

  /// The database file.
  var path: String
  /// Which rule chose it.
  var source: Source

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

  /// Whether the file exists (as anything: SessionStore refuses what is not a database).
  var exists: Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }
}
