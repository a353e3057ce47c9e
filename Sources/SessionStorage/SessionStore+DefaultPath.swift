import Foundation

extension SessionStore {
  /// The file an app and `sessionctl` both use when nobody names another, so that the
  /// administrator's commands act on the app's session:
  ///
  /// - Linux and other XDG systems: `$XDG_DATA_HOME/sessionctl/session.db`, else
  ///   `$HOME/.local/share/sessionctl/session.db` (a relative or empty `XDG_DATA_HOME`
  ///   counts as unset, as the XDG specification says, and so does a relative `HOME`);
  /// - Apple platforms: `sessionctl/session.db` in the user's (or the sandboxed app's)
  ///   Application Support directory.
  ///
  /// The directory is named after the tool that administers it. It may not exist yet: open
  /// the store with ``Options/createsMissingDirectories`` to create it (mode 0700), or get
  /// an error that names it.
  /// - Parameter environment: where to read `XDG_DATA_HOME` and `HOME` (the process's own
  ///   by default).
  /// - Throws: ``SessionStorageError`` (`notFound`) when neither variable gives a directory.
  public static func defaultPath(
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(SessionStorageError) -> String {
    #if canImport(Darwin)
      guard
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
      else {
        throw SessionStorageError(.notFound, "no Application Support directory for this user")
      }
      return support.appendingPathComponent("sessionctl/session.db").path
    #else
      // A trailing slash (HOME=/) adds none: `/.local`, not `//.local`.
      func directory(_ name: String) -> String? {
        guard let value = environment[name], value.hasPrefix("/") else { return nil }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
      }
      if let dataHome = directory("XDG_DATA_HOME") { return dataHome + "/sessionctl/session.db" }
      guard let home = directory("HOME") else {
        throw SessionStorageError(.notFound, "no default location: HOME is not set, nor XDG_DATA_HOME")
      }
      return home + "/.local/share/sessionctl/session.db"
    #endif
  }
}
