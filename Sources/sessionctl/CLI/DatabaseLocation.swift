import Foundation

/// Where the database file is, and why there: `--db`, else `$SESSIONCTL_DB`, else
/// `$XDG_DATA_HOME/sessionctl/session.db`, else `~/.local/share/sessionctl/session.db`.
struct DatabaseLocation: Sendable, Equatable {
  /// Which rule chose the path.
  enum Source: Sendable, Equatable {
    /// `--db PATH`.
    case option
    /// `$SESSIONCTL_DB`.
    case environment
    /// `$XDG_DATA_HOME` or `$HOME/.local/share`: the default location, whose directory
    /// sessionctl creates (mode 0700) on the first write.
    case dataHome
  }

  /// The database file.
  var path: String
  /// Which rule chose it.
  var source: Source

  /// Applies the rules. Empty variables count as unset; a relative `$XDG_DATA_HOME` is
  /// ignored, as the XDG specification says.
  /// - Throws: ``CLIError`` for an empty `--db`, or when no rule gives a path.
  static func resolve(option: String?, environment: [String: String]) throws(CLIError) -> DatabaseLocation {
    if let option {
      guard !option.isEmpty else { throw .invalidInput("the database path given to '--db' is empty") }
      return DatabaseLocation(path: option, source: .option)
    }
    if let path = environment["SESSIONCTL_DB"], !path.isEmpty {
      return DatabaseLocation(path: path, source: .environment)
    }
    if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
      return DatabaseLocation(path: dataHome + "/sessionctl/session.db", source: .dataHome)
    }
    if let home = environment["HOME"], !home.isEmpty {
      return DatabaseLocation(path: home + "/.local/share/sessionctl/session.db", source: .dataHome)
    }
    throw CLIError(.failure, "no database path: pass '--db PATH' or set SESSIONCTL_DB (HOME is not set)")
  }

  /// Whether the file exists (as anything: SessionStore refuses what is not a database).
  var exists: Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// Before a write to the default location: creates its missing directories with mode
  /// 0700. Paths from `--db` and `$SESSIONCTL_DB` are used as given.
  func prepareForWriting() throws(CLIError) {
    guard source == .dataHome else { return }
    let directory = (path as NSString).deletingLastPathComponent
    try Self.makeDirectories(directory)
  }

  private static func makeDirectories(_ directory: String) throws(CLIError) {
    var info = stat()
    if stat(directory, &info) == 0 { return }
    let parent = (directory as NSString).deletingLastPathComponent
    if !parent.isEmpty, parent != directory { try makeDirectories(parent) }
    if mkdir(directory, 0o700) == 0 {
      chmod(directory, 0o700)
    } else if errno != EEXIST {
      let reason = String(cString: strerror(errno))
      throw CLIError(.failure, "\(directory): cannot create the directory: \(reason)")
    }
  }
}
