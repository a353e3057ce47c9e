import Synchronization

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
