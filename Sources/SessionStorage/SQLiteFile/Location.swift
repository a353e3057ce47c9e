internal import SystemKit

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

extension SessionStore {
  /// The file an app and `sessionctl` both use when nobody names another, so that the
  /// administrator's commands act on the app's session. ``Location/resolve(named:environment:)``
  /// applies `sessionctl`'s whole lookup (`$SESSIONCTL_DB` first, then this path); use it
  /// unless the app must ignore `$SESSIONCTL_DB`:
  ///
  /// - Linux and other XDG systems: `$XDG_DATA_HOME/sessionctl/session.db`, else
  ///   `$HOME/.local/share/sessionctl/session.db` (a relative or empty `XDG_DATA_HOME`
  ///   counts as unset, as the XDG specification says, and so does a relative `HOME`);
  /// - Apple platforms: `sessionctl/session.db` in the user's (or the sandboxed app's)
  ///   Application Support directory.
  ///
  /// The directory is named after the tool that administers it. It may not exist yet: open
  /// the store with ``FileOptions/createsMissingDirectories`` to create it (mode 0700), or get
  /// an error that names it. Nobody chose this location on purpose, and another user may
  /// have planted the directory: ``requirePrivateDirectory(for:creatingMissing:)`` checks
  /// that only this user can change it.
  /// - Parameter environment: where to read `XDG_DATA_HOME` and `HOME` (the process's own
  ///   by default).
  /// - Throws: ``SessionStorageError``: `notFound` when neither variable gives a directory;
  ///   `invalidArgument`, naming the variable, for one of the process's own whose bytes are
  ///   not UTF-8 (the environment hands such a value over with U+FFFD in place of those
  ///   bytes: a path that names another file).
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
      func directory(_ name: String) throws(SessionStorageError) -> String? {
        guard let value = try Location.variable(name, in: environment), value.hasPrefix("/") else {
          return nil
        }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
      }
      if let dataHome = try directory("XDG_DATA_HOME") { return dataHome + "/sessionctl/session.db" }
      guard let home = try directory("HOME") else {
        // Unset, or set to a relative path, which the default location ignores: say which.
        let homeIsRelative = environment["HOME"]?.isEmpty == false
        let dataHomeIsRelative = environment["XDG_DATA_HOME"]?.isEmpty == false
        let setHome = "set HOME to the absolute path of your home directory"
        let message =
          switch (homeIsRelative, dataHomeIsRelative) {
          case (false, false): "HOME is not set, nor XDG_DATA_HOME"
          case (true, false): "HOME is a relative path and XDG_DATA_HOME is not set; \(setHome)"
          case (false, true):
            "HOME is not set and XDG_DATA_HOME is a relative path; set either to an absolute path"
          case (true, true): "HOME and XDG_DATA_HOME are relative paths; \(setHome)"
          }
        throw SessionStorageError(.notFound, "no default location: " + message)
      }
      return home + "/.local/share/sessionctl/session.db"
    #endif
  }
}

extension SessionStore {
  /// Where a store is, and which rule chose it: the lookup `sessionctl` makes, so that an
  /// app that resolves its store with it and `sessionctl` use the same file by construction.
  ///
  /// ```swift
  /// let location = try SessionStore.Location.resolve()  // $SESSIONCTL_DB, else the default path
  /// let store = try SessionStore(location: location, options: .init(origin: "MyApp"))
  /// ```
  ///
  /// The rules, first match wins:
  /// 1. a path the caller names (`sessionctl --db PATH`): ``Source/named``;
  /// 2. `$SESSIONCTL_DB`, when set and not empty: ``Source/environment``;
  /// 3. ``SessionStore/defaultPath(environment:)`` (`$XDG_DATA_HOME/sessionctl/session.db`,
  ///    else `~/.local/share/sessionctl/session.db`): ``Source/defaultPath``.
  ///
  /// A named path and `$SESSIONCTL_DB` are used as given: naming a file is the decision to
  /// trust it, and `~` in them is not expanded (a shell expands it only unquoted at the
  /// start of a word). The default location, which nobody chose, is used only when nobody
  /// but this user (and root) can change the directories that lead to it, and its missing
  /// directories are created with mode 0700: ``SessionStore/init(location:options:)`` does
  /// both.
  ///
  /// `sessionctl` also takes a PostgreSQL URL in `--db` and `$SESSIONCTL_DB`; a SQLite store
  /// refuses a location whose path is a URL (see ``init(location:options:)``).
  public struct Location: Sendable, Hashable {
    /// Which rule chose a location.
    public enum Source: Sendable, Hashable {
      /// A path the caller named, such as `sessionctl`'s `--db PATH`.
      case named
      /// The environment variable ``Location/environmentVariable`` (`SESSIONCTL_DB`).
      case environment
      /// ``SessionStore/defaultPath(environment:)``: no rule named a file.
      case defaultPath
    }

    /// The environment variable that names the store when no path is given: `SESSIONCTL_DB`.
    public static let environmentVariable = "SESSIONCTL_DB"

    /// The database file, or a PostgreSQL URL as given (it may hold a password: do not
    /// print it as it is).
    public let path: String
    /// Which rule chose ``path``.
    public let source: Source

    /// A location chosen by `source`, for tests and for callers with rules of their own.
    public init(path: String, source: Source) {
      self.path = path
      self.source = source
    }

    /// The scheme of ``path`` when it is a URL (`postgresql://…`): letters, digits, `+`, `-`
    /// or `.` after a letter, then `://`, and no directory `SCHEME:` in the current directory
    /// (`data://s.db` is the file `s.db` in the directory `data:` when that exists).
    package var urlScheme: String? {
      guard let end = path.firstRange(of: "://"), let first = path.first, first.isLetter else { return nil }
      let scheme = path[..<end.lowerBound]
      let allowed = scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
      return allowed && !FileSystem.lexists(scheme + ":") ? String(scheme) : nil
    }

    /// Applies the rules: `named` when given, else `$SESSIONCTL_DB` when set and not empty,
    /// else the default path. Checks nothing on disk: ``SessionStore/init(location:options:)``
    /// checks the default location's directories when it opens it.
    /// - Parameters:
    ///   - named: a path the user chose (`--db`), or nil.
    ///   - environment: where to read `SESSIONCTL_DB`, `XDG_DATA_HOME` and `HOME` (the
    ///     process's own by default).
    /// - Throws: ``SessionStorageError``: `invalidArgument` for an empty `named` path, and
    ///   for a variable a rule reads that is one of the process's own with bytes that are not
    ///   UTF-8 (named in the message; nothing else is looked at); `notFound` when no rule
    ///   gives a path (no absolute `XDG_DATA_HOME` or `HOME`).
    public static func resolve(
      named: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SessionStorageError) -> Location {
      if let named {
        guard !named.isEmpty else {
          throw SessionStorageError(.invalidArgument, "the database path is empty")
        }
        return Location(path: named, source: .named)
      }
      if let path = try variable(environmentVariable, in: environment), !path.isEmpty {
        return Location(path: path, source: .environment)
      }
      return Location(path: try SessionStore.defaultPath(environment: environment), source: .defaultPath)
    }

    /// The variable `name` of `environment`, refused when it is the process's own variable
    /// whose bytes are not UTF-8: the Swift runtime hands such a value over with U+FFFD in
    /// place of the bytes, a path that names another file (a missing one, or a new one
    /// beside the real one). A path is used byte for byte or not at all, as `sessionctl`
    /// refuses such bytes in its arguments.
    static func variable(_ name: String, in environment: [String: String]) throws(SessionStorageError)
      -> String?
    {
      guard let value = environment[name], value.unicodeScalars.contains("\u{FFFD}"), let raw = getenv(name)
      else { return environment[name] }
      let bytes = UnsafeBufferPointer(start: raw, count: strlen(raw)).map { UInt8(bitPattern: $0) }
      guard String(validating: bytes, as: UTF8.self) == nil, String(decoding: bytes, as: UTF8.self) == value
      else { return value }
      throw SessionStorageError(
        .invalidArgument,
        "the environment variable \(name) is not valid UTF-8: a path is used byte for byte, and these bytes "
          + "cannot be; set \(name) to a path in UTF-8 (or name the file another way); nothing was opened or created"
      )
    }

    /// For the default location: throws unless only this user (and root) can change the
    /// directories that lead to it, creating the missing ones first (mode 0700) when
    /// `creatingMissing` (see ``SessionStore/requirePrivateDirectory(for:creatingMissing:)``).
    /// A named path and `$SESSIONCTL_DB` pass unchecked: they are used as given.
    /// - Throws: ``SessionStorageError``: `unsafeDirectory` naming the directory, and the
    ///   other errors of ``SessionStore/requirePrivateDirectory(for:creatingMissing:)``.
    public func requirePrivateDirectory(creatingMissing: Bool) throws(SessionStorageError) {
      guard source == .defaultPath else { return }
      try SessionStore.requirePrivateDirectory(for: path, creatingMissing: creatingMissing)
    }
  }

  /// Opens the store at a location ``Location/resolve(named:environment:)`` found, as
  /// `sessionctl` opens it: the default location only when only this user (and root) can
  /// change its directories, creating the missing ones (mode 0700) unless `readOnly`; a named
  /// path or `$SESSIONCTL_DB` as given, creating directories only when
  /// ``FileOptions/createsMissingDirectories`` asks.
  /// - Parameters:
  ///   - location: where the store is.
  ///   - options: as for ``init(path:options:)``.
  /// - Throws: ``SessionStorageError``: `invalidArgument` for a path that is a URL
  ///   (`scheme://…`: a server's store, which its backend's initializer opens),
  ///   `unsafeDirectory` for a default location others can change, and everything
  ///   ``init(path:options:)`` throws.
  public convenience init(location: Location, options: FileOptions = FileOptions()) throws {
    if let scheme = location.urlScheme {
      let rule = location.source == .environment ? "$\(Location.environmentVariable)" : "the path"
      throw SessionStorageError(
        .invalidArgument,
        "\(rule) is a \(scheme):// URL, not a file: a SQLite store opens a file; open the URL with the "
          + "initializer of the backend that serves it")
    }
    var options = options
    if location.source == .defaultPath {
      try location.requirePrivateDirectory(creatingMissing: !options.readOnly)
      options.createsMissingDirectories = true
    }
    try self.init(path: location.path, options: options)
  }
}

extension SessionStorageError.Code {
  /// The directory that holds the store, or a directory above it, belongs to another user
  /// or may be written by users other than its owner (its group, everyone), so that
  /// someone else could replace the store or plant files SQLite trusts (a `-wal`, a
  /// `-journal`, a symbolic link). The message names the directory, its owner and mode, and
  /// what to do. Nothing was opened or created. See
  /// ``SessionStore/requirePrivateDirectory(for:creatingMissing:)``.
  public static let unsafeDirectory = Self(rawValue: "unsafeDirectory")
}

extension SessionStore {
  /// Throws unless nobody but this user and root can change what `path` leads to: every
  /// directory from `/` to the one that holds the file, symbolic links followed wherever
  /// they are (also the file's own), belongs to this user or to root, and no other user may
  /// write it. A directory above the store may be writable by others when it is sticky
  /// (`/tmp`): there nobody can rename or remove another user's entries.
  ///
  /// Use it for a location nobody chose on purpose, such as ``defaultPath(environment:)``
  /// (which `sessionctl` checks so): a `HOME` whose `.local/share/sessionctl` another user
  /// planted, a link to a directory everyone may write, would otherwise receive the store
  /// — and, for root, let that user put files where root writes. It opens nothing.
  /// - Parameters:
  ///   - path: the database file; it and the directories below the last existing one may
  ///     be missing.
  ///   - creatingMissing: whether the missing directories are created first (mode 0700, as
  ///     ``FileOptions/createsMissingDirectories`` does), after the existing ones passed; the
  ///     whole chain is then checked again.
  /// - Throws: ``SessionStorageError``: `unsafeDirectory` naming the directory, its owner
  ///   and mode and what to do; `permissionDenied` when a directory cannot be inspected,
  ///   `readOnly` when one cannot be created; `sqlite` for another failure.
  public static func requirePrivateDirectory(for path: String, creatingMissing: Bool = false)
    throws(SessionStorageError)
  {
    try PrivateDirectory.check(path)
    guard creatingMissing else { return }
    do {
      try FileSystem.makeDirectories(above: path)
    } catch let error as SessionStorageError {
      throw error
    } catch {
      throw SessionStorageError(.sqlite, "cannot create the directories: \(error)", path: path)
    }
    try PrivateDirectory.check(path)
  }
}

/// Walks a path from `/` the way the kernel resolves it, following each symbolic link where
/// it is met, and checks every directory it passes through: only this user (or root) may
/// change it. Checking the resolved path alone would miss the directory a link sits in, and
/// its owner could point the link elsewhere after the check. `lstat`, `stat` and `readlink`
/// open nothing.
enum PrivateDirectory {
  /// Throws `unsafeDirectory` for the first directory on the way to `path`'s file that
  /// fails; stops quietly at the first component that does not exist (what is missing is
  /// created by this user, in a directory that passed).
  static func check(_ path: String) throws(SessionStorageError) {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    var pending = Array(components(absolute).reversed())
    var current = "/"
    var links = 0
    try require(current, holdsTheFile: false, for: path)
    while let name = pending.popLast() {
      if name == ".." {
        current = parent(of: current)
        continue
      }
      let next = current == "/" ? "/" + name : current + "/" + name
      let status: FileStatus
      do throws(Errno) {
        status = try FileStatus(next, followingLinks: false)
      } catch {
        let err = error.rawValue
        guard err == ENOENT else {
          throw SessionStorageError(
            systemError: err, "cannot inspect \(next) to see who may change it", writing: false, path: path)
        }
        // Missing: from here on, this user creates what is needed. The directory that
        // would hold the file (when the file is what is missing) is `current`.
        if pending.isEmpty { try require(current, holdsTheFile: true, for: path) }
        return
      }
      switch status.kind {
      case .symbolicLink:
        links += 1
        guard links <= 40, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: next)
        else {
          throw SessionStorageError(
            .sqlite, "cannot follow the symbolic link \(next) (a loop, or unreadable)", path: path)
        }
        if target.hasPrefix("/") { current = "/" }
        pending += components(target).reversed()
      case .directory where !pending.isEmpty:
        try require(next, holdsTheFile: false, for: path)
        current = next
      default:
        // The file itself (or something that is not a directory on the way, which opening
        // the store refuses with its own reason): `current` holds it.
        try require(current, holdsTheFile: true, for: path)
        return
      }
    }
  }

  /// Throws `unsafeDirectory` unless `directory` belongs to this user or root and no one
  /// else may write it (for a directory above the store: unless it is sticky).
  private static func require(_ directory: String, holdsTheFile: Bool, for path: String)
    throws(SessionStorageError)
  {
    guard let status = try? FileStatus(directory) else { return }
    let me = geteuid()
    let mode = status.permissions
    let modeText = "mode " + (mode > 0o777 ? "" : "0") + String(mode, radix: 8)
    if status.owner != me && status.owner != 0 {
      throw SessionStorageError(
        .unsafeDirectory,
        "the directory \(directory) belongs to \(user(status.owner)) (\(modeText)), and this process runs as "
          + "\(user(me)): its owner could replace the store or plant files that SQLite trusts; nothing was "
          + "opened. Use a directory of your own: remove or rename \(directory) (or the link that leads "
          + "there) so that a new one is made, or choose another location",
        path: path)
    }
    let writable = mode & 0o022
    let sticky = mode & 0o1000 != 0
    guard writable != 0, holdsTheFile || !sticky else { return }
    let who =
      switch writable {
      case 0o022: "its group and others"
      case 0o020: "its group"
      default: "others"
      }
    throw SessionStorageError(
      .unsafeDirectory,
      "the directory \(directory) can be written by \(who) (\(modeText), owner \(user(status.owner))): another "
        + "user could replace the store or plant files that SQLite trusts; nothing was opened. Make it private "
        + "('chmod go-w \(directory)'), or choose another location",
      path: path)
  }

  /// `uid 0, root`, or `uid 1234` for a user without a name.
  private static func user(_ uid: uid_t) -> String {
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil,
      let name = entry.pw_name
    else { return "uid \(uid)" }
    return "uid \(uid) (\(String(cString: name)))"
  }

  private static func components(_ path: String) -> [String] {
    path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
  }

  private static func parent(of directory: String) -> String {
    let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
    return parent.isEmpty ? "/" : parent
  }
}
