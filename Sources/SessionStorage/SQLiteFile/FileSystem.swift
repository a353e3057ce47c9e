import CSQLite
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

/// The store's calls to the file system outside SQLite. None opens a store's file, `-wal`
/// or `-shm`: closing *any* descriptor of a file drops the process's POSIX locks on it,
/// SQLite's included, and another process would then delete the WAL we still write into.
enum FileSystem {
  /// A file's identity: the same file whatever path, link or relative spelling names it.
  struct Identity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
  }

  /// Resolves a symbolic link to the file it names, so that SQLite's `-wal` and `-shm` and
  /// the watcher's directory are the target's. A dangling link is refused: creating its
  /// target somewhere unexpected is worse than an error.
  static func resolve(_ path: String) throws -> String {
    guard (try? FileStatus(path, followingLinks: false))?.kind == .symbolicLink else { return path }
    guard let resolved = realpath(path, nil) else {
      throw SessionStorageError(
        .notFound, "this is a symbolic link to a missing file; create the target or remove the link",
        path: path)
    }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// The directory holding `path`, absolute (a relative path is taken from the current
  /// directory). Not `NSString.deletingLastPathComponent`: it traps on a one-character name.
  /// A relative path is made absolute first, so that a leading `~` names a directory `~`
  /// as the file system sees it, never the home directory.
  static func parent(of path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    return URL(fileURLWithPath: absolute).deletingLastPathComponent().path
  }

  /// The identity of what `path` leads to (symbolic links followed), or nil when nothing is
  /// there.
  static func identity(of path: String) -> Identity? {
    guard let status = try? FileStatus(path) else { return nil }
    return Identity(device: status.device, inode: status.inode)
  }

  /// Whether a descriptor of this process holds the file `identity` names after its last
  /// name was removed (deleted while open). Looks through `/proc/self/fd` with `stat`, which
  /// opens none of the files; where there is no `/proc`, it cannot tell and answers yes.
  static func isHeldAfterDeletion(_ identity: Identity) -> Bool {
    guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else {
      return true
    }
    return descriptors.contains { descriptor in
      guard let status = try? FileStatus("/proc/self/fd/" + descriptor) else { return false }
      return status.linkCount == 0 && Identity(device: status.device, inode: status.inode) == identity
    }
  }

  /// Whether anything (a dangling symbolic link too) is at `path`.
  static func lexists(_ path: String) -> Bool {
    (try? FileStatus(path, followingLinks: false)) != nil
  }

  /// The size of the file at `path`, without following a symbolic link; nil when there is
  /// nothing.
  static func sizeIfPresent(_ path: String) -> Int64? {
    (try? FileStatus(path, followingLinks: false))?.size
  }

  /// Makes the entries of `path`'s directory durable (after a link or a rename into it);
  /// best effort: the file itself is complete either way.
  static func syncDirectory(of path: String) {
    let directory = open(parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directory >= 0 else { return }
    fsync(directory)
    close(directory)
  }

  /// Throws `notFound` for a path that begins with `~` and leads to nothing: the caller
  /// meant a home directory, and a path is used as given (only a shell expands `~`), so
  /// the store would go into a directory named `~`, or fail to find one. What exists at such
  /// a path (a file or a directory named `~`) is used as given.
  static func requireNoUnexpandedTilde(_ path: String, _ consequence: String = "nothing was created") throws {
    guard path.hasPrefix("~"), !lexists(path) else { return }
    throw SessionStorageError(
      .notFound,
      "no such file, and '~' is not expanded: a path is used as given (a shell expands '~' only unquoted at "
        + "the start of a word); write the home directory out (\"$HOME/…\", "
        + "FileManager.default.homeDirectoryForCurrentUser), or './~…' for a name that begins with '~'; "
        + consequence,
      path: path)
  }

  /// Throws when the directory a new file would go into is missing: the store creates
  /// files, not directories (unless ``SessionStore/FileOptions/createsMissingDirectories`` asked).
  static func requireDirectory(of path: String) throws {
    let directory = parent(of: path)
    guard !directory.isEmpty else { return }
    do throws(Errno) {
      _ = try FileStatus(directory)
      return
    } catch {
      guard error == .noSuchFile else { return }
    }
    throw SessionStorageError(
      .notFound,
      "the directory \(directory) does not exist (a store creates its file, not directories)",
      path: path)
  }

  /// The longest path SQLite opens a database by: its file system's `mxPathname` less the
  /// 8 bytes it keeps for the `-journal` name (504 on Linux). SQLite measures the path as it
  /// resolves it: absolute, with every symbolic link followed.
  static let longestPath = Int(sqlite3_vfs_find(nil)?.pointee.mxPathname ?? 512) - 8

  /// Throws `pathTooLong` when SQLite could not open `path` (also after `reserving` more
  /// bytes, for a name built from it), instead of its bare "unable to open database file".
  static func requireOpenablePath(_ path: String, reserving extra: Int = 0, shown: String? = nil) throws {
    let length = resolvedForSQLite(path).utf8.count
    guard length + extra > longestPath else { return }
    let limit =
      extra > 0
      ? "at most \(longestPath - extra) for a new store, which is built under a name \(extra) bytes longer first"
      : "SQLite opens at most \(longestPath)"
    throw SessionStorageError(
      .pathTooLong,
      "the path is too long for SQLite: \(length) bytes made absolute (with symbolic links followed), \(limit); "
        + "use a path in a directory whose full path is shorter (a symbolic link to it does not help: "
        + "SQLite follows links)",
      path: shown ?? path)
  }

  /// `path` as SQLite measures it: absolute, with symbolic links resolved as far as the path
  /// exists (the rest, such as a file to be created, appended as given).
  static func resolvedForSQLite(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    var head = absolute
    var tail: [Substring] = []
    while !head.isEmpty {
      if let resolved = realpath(head, nil) {
        defer { free(resolved) }
        let base = String(cString: resolved)
        return tail.reversed().reduce(base == "/" ? "" : base) { $0 + "/" + $1 }
      }
      guard let slash = head.lastIndex(of: "/") else { break }
      tail.append(head[head.index(after: slash)...])
      head = String(head[..<slash])
    }
    return absolute
  }

  /// Creates the missing directories above `path` with mode 0700 (only its owner may enter),
  /// as `mkdir -p` does: from `/` down, each missing component is created, also one that a
  /// `..` follows (`$HOME/missing/..`), since the kernel resolves `..` only in a directory
  /// that exists. One pass over the components: a path ends, whatever it holds.
  static func makeDirectories(above path: String) throws {
    var directory = ""
    for name in parent(of: path).split(separator: "/") {
      directory += "/" + name
      guard name != ".", name != "..", (try? FileStatus(directory)) == nil else { continue }
      if mkdir(directory, 0o700) == 0 {
        chmod(directory, 0o700)  // whatever the umask
        continue
      }
      let err = errno
      guard err != EEXIST else { continue }  // made by someone else meanwhile
      throw SessionStorageError(
        systemError: err, "cannot create the directory \(directory)", writing: true, path: path)
    }
  }
}

extension SessionStorageError.Code {
  /// What the `errno` of a failed system call on a store's path means for a store; nil for
  /// an error with no code of its own. `EACCES` and `EPERM` mean that the directory or file
  /// cannot be written (`readOnly`) for a call that creates or writes, and that this user
  /// may not look (`permissionDenied`) for one that reads or inspects.
  static func forSystemError(_ err: Int32, writing: Bool) -> Self? {
    switch err {
    case EROFS: .readOnly
    case EACCES, EPERM: writing ? .readOnly : .permissionDenied
    case ENOENT, ENOTDIR: .notFound
    case ENAMETOOLONG: .pathTooLong
    case ENOSPC, EDQUOT: .full
    default: nil
    }
  }
}

extension SessionStorageError {
  /// The error of a system call on `path` that failed with `err`: the code it means
  /// (``Code/forSystemError(_:writing:)``, else `sqlite`) and "`what`: why", where why is the
  /// system's message, and for a file that cannot be created because its directory is
  /// missing, also what to do.
  init(systemError err: Int32, _ what: String, writing: Bool, path: String) {
    let reason =
      writing && err == ENOENT
      ? "its directory does not exist (any more) (\(Errno(rawValue: err))); create it, or choose another path"
      : "\(Errno(rawValue: err))"
    self.init(.forSystemError(err, writing: writing) ?? .sqlite, "\(what): \(reason)", path: path)
  }
}
