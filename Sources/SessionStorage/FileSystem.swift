import CSQLite
import Synchronization
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
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return path }
    guard let resolved = realpath(path, nil) else {
      throw SessionStorageError(
        .notFound, "this is a symbolic link to a missing file; create the target or remove the link",
        path: path)
    }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// The file's identity, from `stat` alone. Nil for a missing file that may be created;
  /// throws for a missing file that may not, a directory, anything but a regular file, and
  /// an empty file.
  static func identify(_ path: String, mayCreate: Bool) throws -> Identity? {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let err = errno
      if err == ENOENT {
        if mayCreate {
          try requireDirectory(of: path)
          return nil
        }
        throw SessionStorageError(
          .notFound, "no database here (it is created by the first write)", path: path)
      }
      if err == ENAMETOOLONG {
        throw SessionStorageError(
          .pathTooLong,
          "the path is too long for the system (\(Errno(rawValue: err))): a name may have at most "
            + "\(NAME_MAX) bytes, a path \(PATH_MAX - 1); use a shorter one", path: path)
      }
      throw SessionStorageError(systemError: err, "cannot inspect the file", writing: false, path: path)
    }
    if (info.st_mode & S_IFMT) == S_IFDIR {
      throw SessionStorageError(.notADatabase, "this is a directory, not a database file", path: path)
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
      throw SessionStorageError(.notADatabase, "this is not a regular file", path: path)
    }
    if info.st_size == 0 {
      throw SessionStorageError(
        .notADatabase, "the file is empty (0 bytes); remove it or choose another path", path: path)
    }
    return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
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
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
  }

  /// Whether a descriptor of this process holds the file `identity` names after its last
  /// name was removed (deleted while open). Looks through `/proc/self/fd` with `stat`, which
  /// opens none of the files; where there is no `/proc`, it cannot tell and answers yes.
  static func isHeldAfterDeletion(_ identity: Identity) -> Bool {
    guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else {
      return true
    }
    return descriptors.contains { descriptor in
      var info = stat()
      return stat("/proc/self/fd/" + descriptor, &info) == 0 && info.st_nlink == 0
        && Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == identity
    }
  }

  /// Whether anything (a dangling symbolic link too) is at `path`.
  static func lexists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// The size of the file at `path`, without following a symbolic link; nil when there is
  /// nothing.
  static func sizeIfPresent(_ path: String) -> Int64? {
    var info = stat()
    return lstat(path, &info) == 0 ? Int64(info.st_size) : nil
  }

  /// What is at `path` (symbolic links followed) when it is something other than a regular
  /// file — "a directory", "a FIFO" — or nil for a regular file or nothing.
  static func kindOtherThanRegular(_ path: String) -> String? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    switch info.st_mode & S_IFMT {
    case S_IFREG: return nil
    case S_IFDIR: return "a directory"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFIFO: return "a FIFO"
    case S_IFSOCK: return "a socket"
    default: return "an unknown kind of file"
    }
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
  /// files, not directories (unless ``SessionStore/Options/createsMissingDirectories`` asked).
  static func requireDirectory(of path: String) throws {
    let directory = parent(of: path)
    var info = stat()
    guard !directory.isEmpty, stat(directory, &info) != 0, errno == ENOENT else { return }
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
      var info = stat()
      guard name != ".", name != "..", stat(directory, &info) != 0 else { continue }
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

  /// Throws for a file that is not a SQLite database or was cut off, reading its header
  /// through `connection` before SQLite has read the file. A file whose header counts more
  /// pages than it holds is then read once through SQLite, as the open's first read would
  /// read it, which accepts it when its WAL holds them (a checkpoint growing the file);
  /// refused, it is reported as truncated.
  static func inspectHeader(through connection: Connection) throws {
    let path = connection.path
    let (header, size) = try connection.rawHeader()
    guard header.starts(with: Array("SQLite format 3\0".utf8)) else {
      throw SessionStorageError(.notADatabase, "not a SQLite database (the header is wrong)", path: path)
    }
    guard size >= 100 else {
      throw SessionStorageError(.corrupt, "the file is truncated (\(size) bytes)", path: path)
    }
    // The header's page count is valid when its version-valid-for number equals the change
    // counter. A file shorter than that count may be cut off, or may be whole: with a WAL,
    // SQLite takes the database's size from the WAL, and a checkpoint that grows the file
    // writes page 1 before the pages it counts. SQLite decides: its first read compares the
    // page count it sees (page 1 from the WAL when there) with the size it sees, and refuses
    // a truncated file as corrupt. Its verdict is worded here, not replaced.
    func integer(_ offset: Int, _ width: Int) -> Int {
      header[offset..<offset + width].reduce(0) { $0 << 8 | Int($1) }
    }
    let pageSize = integer(16, 2) == 1 ? 65_536 : integer(16, 2)
    let pageCount = integer(28, 4)
    guard integer(92, 4) == integer(24, 4), pageCount > 0, size < Int64(pageCount) * Int64(pageSize) else {
      return
    }
    do {
      _ = try connection.scalarInt(pageCountSQL)
    } catch let error as SessionStorageError
      where [SQLITE_CORRUPT, SQLITE_NOTADB].contains((error.resultCode ?? 0) & 0xff)
    {
      throw SessionStorageError(
        .corrupt,
        "the file is truncated: its header counts \(pageCount) pages of \(pageSize) bytes, the file has \(size) bytes",
        path: path, resultCode: error.resultCode)
    }
  }

  /// A read of the database's size, which makes SQLite check the header against it.
  private static let pageCountSQL = SQL("PRAGMA page_count")

  /// Why this user cannot use an existing file SQLite failed to open or write, from
  /// `access(2)` (which opens nothing): the file unreadable, the file unwritable (for a
  /// writer), or a directory where SQLite cannot create the `-wal` and `-shm` files.
  /// Nil when none of these holds.
  static func denial(_ path: String, writing: Bool, resultCode: Int32? = nil) -> SessionStorageError? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    let owner =
      "owner uid \(info.st_uid), mode 0\(String(info.st_mode & 0o777, radix: 8)); this user is uid \(getuid())"
    if access(path, R_OK) != 0 {
      return SessionStorageError(
        .permissionDenied, "permission denied: this user cannot read the file (\(owner))", path: path,
        resultCode: resultCode)
    }
    if writing, access(path, W_OK) != 0 {
      return errno == EROFS
        ? SessionStorageError(
          .readOnly, "the file system is read-only; open the store read-only to read it", path: path,
          resultCode: resultCode)
        : SessionStorageError(
          .permissionDenied,
          "permission denied: this user cannot write the file (\(owner)); open the store read-only to read it",
          path: path, resultCode: resultCode)
    }
    let directory = parent(of: path)
    if access(directory, W_OK) != 0 {
      let reason =
        errno == EROFS
        ? "the file system is read-only"
        : "this user (uid \(getuid())) cannot write the directory \(directory)"
      return SessionStorageError(
        .readOnly,
        "cannot create SQLite's -wal and -shm files beside the database: \(reason)"
          + (writing ? "; open the store read-only to read it" : ""),
        path: path, resultCode: resultCode)
    }
    return nil
  }
}

/// A new file built under a private name beside its final path (mode 0600, whatever the
/// umask), then linked or renamed into place whole: no process ever sees it half made.
struct StagedFile {
  /// Where the file goes.
  let path: String
  /// The private name it is built under: `.NAME.PURPOSE-XXXXXX` in the same directory.
  let temporary: String
  /// What a refusal says was not done ("nothing was created").
  let consequence: String

  /// Creates the empty private file beside `path`. Both names must fit SQLite's path limit:
  /// a too long `path` is refused (`pathTooLong`, naming `path`) before anything is made,
  /// and so is a missing `path` with a leftover companion (``requireNoLeftovers(beside:_:)``;
  /// an existing file's companions are its own, unless ``place(overwrite:what:)`` replaces it,
  /// which checks them then). `what` names the file in errors ("the database file"),
  /// `consequence` ends a refusal.
  ///
  /// The private name is chosen here (six random characters, as `mkstemp` would) and kept
  /// in ``StagedFiles`` *before* the file is made (`O_CREAT | O_EXCL | O_NOFOLLOW`, another
  /// name when one is taken): a signal at any moment finds the name of every file there is.
  init(beside path: String, purpose: String, what: String, consequence: String = "nothing was created") throws
  {
    if !FileSystem.lexists(path) { try Self.requireNoLeftovers(beside: path, consequence) }
    let directory = FileSystem.parent(of: path)
    let name = URL(fileURLWithPath: path).lastPathComponent
    let prefix = "\(directory)/.\(name).\(purpose)-"
    try FileSystem.requireOpenablePath(
      path, reserving: prefix.utf8.count + 6 - "\(directory)/\(name)".utf8.count, shown: path)
    self.path = path
    self.consequence = consequence
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<100 {
      let temporary =
        prefix
        + String((0..<6).map { _ in Self.letters[Int.random(in: Self.letters.indices, using: &generator)] })
      let (fd, err, slot) = try StagedFiles.shared.create(
        temporary, path: path, consequence: consequence, with: Self.makePrivately)
      guard fd >= 0 else {
        if err == EEXIST { continue }
        throw SessionStorageError(systemError: err, "cannot create \(what)", writing: true, path: path)
      }
      fchmod(fd, 0o600)  // open gives 0600 less the umask: 0400 under umask 0277
      close(fd)
      self.temporary = temporary
      self.slot = slot
      return
    }
    throw SessionStorageError(
      systemError: EEXIST, "cannot create \(what) (no free private name after 100 tries)", writing: true,
      path: path)
  }

  /// Makes the private file `name`, never one that is there (nor a symbolic link's target).
  static func makePrivately(_ name: String) -> Int32 {
    open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
  }

  /// The characters of a private name's random part.
  private static let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

  /// Where ``StagedFiles`` keeps the private name for a signal handler; nil when it has no
  /// room left.
  private let slot: Int?

  /// The private file's name and the names of the companions SQLite may make beside it.
  static func names(of temporary: String) -> [String] {
    ["", "-wal", "-shm", "-journal"].map { temporary + $0 }
  }

  /// Removes the private file and any companion SQLite left beside it; after ``place(overwrite:what:)``
  /// succeeded only the companions are left to remove.
  func discard() {
    for name in Self.names(of: temporary) { unlink(name) }
    if let slot { StagedFiles.shared.unregister(slot) }
  }

  /// Puts the file at ``path`` — with `overwrite`, renamed over what is there; otherwise
  /// linked, which fails when anything is there — and makes the directory entry durable.
  /// Returns false, placing nothing, when `path` exists and `overwrite` is false.
  /// - Throws: the error of a failed link or rename, `what` naming the file; the refusal of
  ///   ``requireNoLeftovers(beside:_:)``.
  func place(overwrite: Bool, what: String) throws -> Bool {
    // A leftover may have come meanwhile. A file that came is no concern: the link fails.
    if overwrite || !FileSystem.lexists(path) { try Self.requireNoLeftovers(beside: path, consequence) }
    guard (overwrite ? rename(temporary, path) : link(temporary, path)) == 0 else {
      let err = errno
      if err == EEXIST && !overwrite { return false }
      throw SessionStorageError(systemError: err, "cannot create \(what)", writing: true, path: path)
    }
    FileSystem.syncDirectory(of: path)
    return true
  }
}

/// The private names of the files this process is staging (``StagedFile``), where a signal
/// handler can remove them: a process that a signal ends in the middle of a backup or the
/// creation of a store leaves no hidden, full-size copy behind, when its handler calls
/// ``removeAll()`` before it exits.
package enum StagedFiles {
  /// The process's registry.
  static let shared = Registry()

  /// Makes sure the registry exists, so that a signal handler calling ``removeAll()`` never
  /// allocates it: call it before installing such a handler.
  package static func prepareForSignalHandlers() { _ = shared }

  /// Removes every file being staged, and its companions (``Registry/removeAll()``); every
  /// later staging in this process fails. Async-signal-safe.
  package static func removeAll() { shared.removeAll() }

  /// Names kept for a signal handler.
  ///
  /// A handler may take no lock and allocate nothing, so the names live in memory allocated
  /// once, in slots that an atomic state hands from the staging thread to the handler: vacant,
  /// being written, creating (the name kept, its file being made), holding (the file made).
  /// A name is kept before its file exists, and a handler on another thread waits for a
  /// file being made, so it never unlinks a name before the file appears; after
  /// ``removeAll()`` nothing more is registered. Up to ``capacity`` files are kept at once;
  /// one more is staged all the same, but a signal leaves it behind.
  final class Registry: Sendable {
    // Constants of the instance, not static: a static is made on first use, which a signal
    // handler must not be.
    /// How many files can be kept at once.
    let capacity = 8
    /// The bytes of one name, with its NUL: the longest path, and room for `-journal`.
    private let nameBytes = Int(PATH_MAX) + 16
    private let namesPerSlot = 4

    private let vacant = 0
    private let writing = 1
    private let creating = 2
    private let holding = 3

    /// The slots' states, the threads making their files, and their names; allocated once
    /// and never freed.
    private nonisolated(unsafe) let states: UnsafeMutablePointer<Atomic<Int>>
    private nonisolated(unsafe) let creators: UnsafeMutablePointer<Atomic<UInt>>
    private nonisolated(unsafe) let names: UnsafeMutablePointer<CChar>
    /// Whether ``removeAll()`` ran.
    private let ending = Atomic<Bool>(false)
    /// How many milliseconds ``removeAll()`` waits, at most, for a file another thread is
    /// making (one `open(2)`).
    private let creationWait: Int

    init(creationWait: Int = 5_000) {
      self.creationWait = creationWait
      states = .allocate(capacity: capacity)
      creators = .allocate(capacity: capacity)
      for index in 0..<capacity {
        (states + index).initialize(to: Atomic(0))  // vacant
        (creators + index).initialize(to: Atomic(0))
      }
      names = .allocate(capacity: capacity * namesPerSlot * nameBytes)
    }

    /// Removes every registered file and its companions, and makes every later
    /// ``create(_:path:consequence:with:)`` fail: call it from a handler that then ends the
    /// process.
    ///
    /// Async-signal-safe: atomic loads and stores, `pthread_self`, `nanosleep` and
    /// `unlink(2)`. A file that another thread is making is waited for (at most
    /// `creationWait` milliseconds), so that it is there to remove; one that the interrupted
    /// thread itself was making is removed if its `open(2)` made it.
    func removeAll() {
      // Sequentially consistent with `register`'s store of `creating` and load of `ending`:
      // either the registering thread sees `ending` and makes nothing, or this sees `creating`.
      ending.store(true, ordering: .sequentiallyConsistent)
      let this = Self.currentThread()
      for index in 0..<capacity {
        var state = states[index].load(ordering: .sequentiallyConsistent)
        var waited = 0
        while state == creating, creators[index].load(ordering: .acquiring) != this, waited < creationWait {
          var millisecond = timespec(tv_sec: 0, tv_nsec: 1_000_000)
          nanosleep(&millisecond, nil)
          waited += 1
          state = states[index].load(ordering: .sequentiallyConsistent)
        }
        guard state == holding || state == creating else { continue }
        for name in 0..<namesPerSlot { unlink(names + (index * namesPerSlot + name) * nameBytes) }
      }
    }

    /// Makes the file `temporary` with `make` (``StagedFile/makePrivately(_:)``), its names
    /// kept from before it exists. Returns `make`'s descriptor (-1 when it failed, with the
    /// `errno`), and the slot that keeps the names while the file is there: free it with
    /// ``unregister(_:)`` once the file is placed or removed. The slot is nil when every one
    /// is taken or a name does not fit, and after a failed `make`.
    /// - Throws: once ``removeAll()`` ran (the process is ending), naming `path` and ending
    ///   with `consequence`: nothing is made then.
    func create(_ temporary: String, path: String, consequence: String, with make: (String) -> Int32) throws
      -> (descriptor: Int32, error: Int32, slot: Int?)
    {
      let slot = try register(temporary, path: path, consequence: consequence)
      let descriptor = make(temporary)
      let error = errno
      guard let slot else { return (descriptor, error, nil) }
      guard descriptor >= 0 else {
        unregister(slot)
        return (descriptor, error, nil)
      }
      states[slot].store(holding, ordering: .releasing)
      return (descriptor, error, slot)
    }

    /// Keeps `temporary`'s names for ``removeAll()`` before its file is made, in a slot left
    /// *creating*. Returns nil when every slot is taken or a name does not fit.
    /// - Throws: once ``removeAll()`` ran.
    private func register(_ temporary: String, path: String, consequence: String) throws -> Int? {
      let names = StagedFile.names(of: temporary)
      func ended() -> SessionStorageError {
        SessionStorageError(.sqlite, "the process is ending (a signal arrived); \(consequence)", path: path)
      }
      guard !ending.load(ordering: .sequentiallyConsistent) else { throw ended() }
      guard names.allSatisfy({ $0.utf8.count < nameBytes }) else { return nil }
      for index in 0..<capacity
      where states[index].compareExchange(
        expected: vacant, desired: writing, ordering: .sequentiallyConsistent
      ).exchanged {
        // A handler that saw this slot holding the previous names may still be reading them.
        guard !ending.load(ordering: .sequentiallyConsistent) else {
          states[index].store(vacant, ordering: .releasing)
          throw ended()
        }
        for (offset, name) in names.enumerated() {
          let start = self.names + (index * namesPerSlot + offset) * nameBytes
          name.withCString { _ = strcpy(start, $0) }
        }
        creators[index].store(Self.currentThread(), ordering: .releasing)
        states[index].store(creating, ordering: .sequentiallyConsistent)
        guard !ending.load(ordering: .sequentiallyConsistent) else {
          states[index].store(vacant, ordering: .releasing)
          throw ended()
        }
        return index
      }
      return nil
    }

    /// Frees the slot ``create(_:path:consequence:with:)`` returned: its file is placed or
    /// removed.
    func unregister(_ index: Int) {
      states[index].store(vacant, ordering: .releasing)
    }

    /// The calling thread (`pthread_self`, which reads a register: async-signal-safe).
    private static func currentThread() -> UInt {
      #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
      #else
        UInt(pthread_self())
      #endif
    }
  }
}

extension StagedFile {
  /// Throws `fileExists` when a file that SQLite pairs with a database by its name — `-wal`,
  /// `-shm`, `-journal` — sits beside `path` and would be taken for the new file's own:
  /// SQLite replays a `-wal` and rolls back a hot `-journal` into the file it finds them
  /// beside, whichever database wrote them, and shares a `-shm` with every process that
  /// still has the old one open.
  ///
  /// Without a file at `path`, any of them is refused: it is left from a database deleted or
  /// moved (a crash, or a process that still has it open and goes on writing into its
  /// `-wal`), so it is not removed here but named, with what to do. When a file is there (a
  /// backup replaces it), its empty `-wal` and `-shm` are its own and harmless, but a
  /// `-wal` holding commits or a `-journal` holding a transaction means that something has
  /// it open, or crashed while writing it.
  ///
  /// The message names the leftover files and ends with `consequence`; the error's path is
  /// `path`.
  static func requireNoLeftovers(beside path: String, _ consequence: String) throws {
    let present = ["-wal", "-shm", "-journal"].filter { FileSystem.lexists(path + $0) }
    guard !present.isEmpty else { return }
    let names = present.map { path + $0 }
    guard FileSystem.lexists(path) else {
      let what = present.count == 1 ? "its \(present[0]) file is" : "its " + Self.list(present) + " files are"
      throw SessionStorageError(
        .fileExists,
        "no file is there, but \(what) left from another database (one deleted or moved, maybe still open in a "
          + "process), and SQLite would \(Self.list(present.map(Self.effect))); \(consequence). If no process has "
          + "that database open, remove \(Self.list(names)), or choose another name",
        path: path)
    }
    if FileSystem.sizeIfPresent(path + "-wal") ?? 0 > 0 {
      throw SessionStorageError(
        .fileExists,
        "its -wal file holds commits, so something has it open or crashed: stop it (or open the file once, to "
          + "move them in), then try again; \(consequence)", path: path)
    }
    if FileSystem.sizeIfPresent(path + "-journal") ?? 0 > 0 {
      throw SessionStorageError(
        .fileExists,
        "its -journal file holds a transaction, so something is writing it or crashed: stop it (or open the file "
          + "once, to roll the transaction back), then try again; \(consequence)", path: path)
    }
  }

  /// What SQLite would do with a leftover companion file of `suffix` beside a new database.
  private static func effect(of suffix: String) -> String {
    switch suffix {
    case "-wal": "replay the -wal's commits into the new file"
    case "-journal": "roll the -journal back into the new file"
    default: "share the -shm's locks with whoever has the old database open"
    }
  }

  /// "a", "a and b", "a, b and c".
  private static func list(_ items: [String]) -> String {
    guard let last = items.last, items.count > 1 else { return items.joined() }
    return items.dropLast().joined(separator: ", ") + " and " + last
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
