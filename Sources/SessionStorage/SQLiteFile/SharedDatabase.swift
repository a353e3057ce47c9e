import Dispatch
import FeedKit
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The connections this process holds on one database file, shared by every
/// ``SessionStore`` opened on it, so that no instance can disturb another's locks; closed
/// when the last instance and the last subscription made from one are released.
final class SharedDatabase: Sendable {
  /// The writer connection and the settings it was last switched to.
  private struct Writer {
    var connection: Connection
    var durability: SessionStore.Durability

    /// Turns the connection's triggers off: the writer's writes record their own feed rows,
    /// advance the tip and apply the retention policy (``RosterWrite``), which the triggers
    /// do for every other client's edits; its maintenance (compaction, a policy's DELETEs, a
    /// restore) fires no trigger on any connection.
    init(connection: Connection, durability: SessionStore.Durability) throws {
      try connection.setTriggersEnabled(false)
      self.connection = connection
      self.durability = durability
    }
  }

  /// The writer, in a box of its own so that the watcher made in `init` can look at it.
  private final class WriterSlot: Sendable {
    /// Nil until the first write opens it (or for a file opened read-only).
    let writer: Mutex<Writer?>
    /// Opens the writer at the first write; nil for a file opened read-only, until a
    /// writable instance gives it a writer (``SharedDatabase/addWriter(_:_:)``).
    let opener: (@Sendable () throws -> sending Writer)?
    /// Moves as each write begins and again as it ends: odd while one is under way.
    let writes = Atomic<UInt64>(0)

    init(opener: (@Sendable () throws -> sending Writer)?) {
      writer = Mutex(nil)
      self.opener = opener
    }

    /// The writer's `PRAGMA data_version`, which moves with the commits of every connection
    /// but the writer itself; `.some(nil)` when there is no writer. With `waiting`, it waits
    /// for a write of this process that holds the writer: that write either commits (and
    /// wakes subscribers, who read every commit before it too) or gives up, and then the
    /// version says what others did; without, such a write makes it nil.
    ///
    /// A writable file's writer opens here if no write opened it yet: only its version tells
    /// this process's commits from others' (a version read on the reader first and on the
    /// writer later would wake subscribers once for nothing).
    func dataVersion(waiting: Bool) throws -> Int64?? {
      guard waiting else { return try writer.withLockIfAvailable { try dataVersion(of: &$0) } }
      return try writer.withLock { try dataVersion(of: &$0) }
    }

    private func dataVersion(of writer: inout Writer?) throws -> Int64? {
      if writer == nil, let opener { writer = try opener() }
      return try writer.map { try $0.connection.scalarInt(SessionLog.dataVersionSQL) ?? 0 }
    }
  }

  /// The connection that inspected the file as it opened, until the first read or write
  /// takes it as the reader or the writer: a process that only reads, or only writes, opens
  /// one connection.
  private final class Spare: Sendable {
    private let connection: Mutex<Connection?>

    init(_ connection: consuming sending Connection) { self.connection = Mutex(connection) }

    func take() -> sending Connection? { connection.withLock { $0.take() } }
  }

  /// The path of the instance that opened the file first; errors name it.
  let path: String
  let log: SessionLog
  let beacon: Beacon
  let feed: Feed<SessionChange, SessionState>
  private let slot: WriterSlot
  /// Where async writes wait for the writer, off their callers' actors.
  let writeQueue = DispatchQueue(label: "SessionStorage.write")

  /// Composes the connection the ``Opener`` opened first (and migrated, unless the file is
  /// opened read-only) into the file's log, its writer (none when it is not `writable`)
  /// and the watcher that wakes subscribers. The reader and the writer open when they are
  /// first needed, the first of them taking `first`.
  init(
    _ path: String, _ identity: FileSystem.Identity, _ options: SessionStore.FileOptions,
    first: consuming sending Connection, readerMode: Connection.Mode, writable: Bool,
    refusal: SessionStorageError? = nil
  ) {
    self.path = path
    let file = OpenedFile(path: path, identity: identity, watchesWAL: readerMode != .immutable)
    let spare = Spare(first)
    let busyTimeout = options.busyTimeout
    log = SessionLog(
      reader: LazyConnection {
        let reader =
          try spare.take()
          ?? file.open { try Connection(path: path, mode: readerMode, busyTimeout: busyTimeout) }
        try reader.execute("PRAGMA query_only = ON")
        return reader
      }, file: file, refusal: refusal)
    let durability = options.durability
    let openWriter: @Sendable () throws -> sending Writer = {
      let connection = try spare.take() ?? file.open { try Opener.openWriter(path, options).connection }
      return try Writer(connection: connection, durability: durability)
    }
    let slot = WriterSlot(opener: writable ? openWriter : nil)
    self.slot = slot
    let log = self.log
    // One wake-up per commit: a commit of this process wakes subscribers as it returns, and
    // the watcher looks at the writer's `data_version`, which such a commit does not move.
    // Without a writer (none was opened, or the instances that held it are gone while a
    // subscription lives on) no commit is this process's: the reader's is looked at. Held
    // weakly: a watcher winding down must not keep the file open.
    let watch = CrossProcessWatch(
      path: path, pollInterval: options.safetyPollInterval,
      version: { [weak slot, weak log] waiting in
        guard let log else { return nil }
        // The writer goes with the last instance; a subscription can outlive it.
        if let slot {
          guard let onWriter = try slot.dataVersion(waiting: waiting) else { return nil }
          if let version = onWriter { return .init(onWriter: true, value: version) }
        }
        return .init(onWriter: false, value: try log.dataVersion())
      },
      replaced: { file.noticeReplacement() },
      localWrites: { [weak slot] in slot?.writes.load(ordering: .acquiring) ?? 0 })
    let page = SharedPage<SessionChange>()
    beacon = Beacon(
      activate: { beacon in
        beacon.report(
          watch.start { [weak beacon, weak log] in
            guard let beacon, let log else { return }
            beacon.signal()
            // This thread reads the page while the woken subscribers' tasks are scheduled.
            Feed(source: log, signal: beacon, sharedPage: page).readAhead()
          })
      },
      deactivate: { watch.stop() })
    feed = Feed(source: log, signal: beacon, sharedPage: page)
  }

  /// Gives a file opened by read-only instances its writer, made by `open` under the
  /// writer's lock, unless a writable instance gave it one already.
  func addWriter(_ options: SessionStore.FileOptions, _ open: () throws -> sending Connection) throws {
    guard slot.opener == nil else { return }  // the first write opens it
    try slot.writer.withLock { writer in
      guard writer == nil else { return }
      writer = try Writer(connection: try open(), durability: options.durability)
    }
  }

  /// Runs `body` on the writer, switched first to this instance's durability and busy
  /// timeout (each instance keeps its own). While it waits for another process's lock, it
  /// gives up as soon as `isCancelled` says so.
  func withWriter<Result: Sendable>(
    _ options: SessionStore.FileOptions, isCancelled: (@Sendable () -> Bool)? = nil,
    _ body: (Connection) throws -> Result
  ) throws -> Result {
    try slot.writer.withLock { writer in
      guard writer != nil || slot.opener != nil else { throw SessionStorageError.openedReadOnly(path) }
      // A write into a file that was replaced or deleted would be lost to everyone else.
      try log.file.requireSameFile()
      if writer == nil, let opener = slot.opener { writer = try opener() }
      guard let current = writer else { throw SessionStorageError.openedReadOnly(path) }
      if current.durability != options.durability {
        try current.connection.execute("PRAGMA synchronous = \(options.durability.pragmaValue)")
        writer?.durability = options.durability
      }
      current.connection.busyTimeout = options.busyTimeout
      current.connection.isCancelled = isCancelled
      slot.writes.add(1, ordering: .releasing)
      defer {
        slot.writes.add(1, ordering: .releasing)
        current.connection.isCancelled = nil
      }
      return try body(current.connection)
    }
  }
}

extension SharedDatabase {
  /// Wakes subscribers for a commit this process made.
  func wake(after entry: SessionEntry) { beacon.signal() }
}

/// Wakes a store's subscribers, while it has any, when another process commits: a
/// ``ChangeWatcher`` on the database's directory (the WAL comes and goes with connections)
/// that re-checks `PRAGMA data_version`, since the WAL is written before the commit shows.
final class CrossProcessWatch: Sendable {
  private let path: String
  private let pollInterval: Duration
  private let version: @Sendable (_ waiting: Bool) throws -> Version?
  private let replaced: @Sendable () -> Bool
  private let localWrites: @Sendable () -> UInt64
  private let watcher = Mutex<ChangeWatcher?>(nil)
  private let last = Mutex<Version?>(nil)

  /// A `PRAGMA data_version` and the connection it was read on: it moves with every commit
  /// of another connection than that one.
  struct Version: Equatable {
    /// Read on the writer, whose own commits (the ones this process already woke
    /// subscribers for) do not move it; else on the reader, which never writes.
    var onWriter: Bool
    var value: Int64
  }

  /// - Parameters:
  ///   - pollInterval: how often to re-check when no file event comes.
  ///   - version: the current ``Version``; nil once the store is gone (nothing to wake), and
  ///     without `waiting` while a write of this process holds the writer.
  ///   - replaced: whether the path was just found to name another file (or none).
  ///   - localWrites: moves as each write of this process begins and ends (see
  ///     ``ChangeWatcher``): events among them are looked at once they are over.
  init(
    path: String, pollInterval: Duration, version: @escaping @Sendable (_ waiting: Bool) throws -> Version?,
    replaced: @escaping @Sendable () -> Bool, localWrites: @escaping @Sendable () -> UInt64
  ) {
    self.path = path
    self.pollInterval = pollInterval
    self.version = version
    self.replaced = replaced
    self.localWrites = localWrites
  }

  /// Starts watching; `signal` runs on the watcher's thread after each commit noticed, and
  /// again when the path, looked at right after it, was just found replaced. Returns how the
  /// watcher is woken (notifications, or a poll and why).
  func start(signal: @escaping @Sendable () -> Void) -> WakeMode {
    // The baseline, without waiting for a write of this process: the thread that subscribes
    // must not wait for a lock another process holds. Without one the first re-check wakes
    // subscribers once, for nothing.
    _ = hasChanged(waiting: false)
    let url = URL(fileURLWithPath: path)
    let name = url.lastPathComponent
    let created = ChangeWatcher(
      directory: url.deletingLastPathComponent().path, fileNames: [name, name + "-wal", name + "-journal"],
      pollInterval: pollInterval, hasChanged: { [weak self] in self?.hasChanged(waiting: true) ?? false },
      localWrites: localWrites,
      onChange: { [replaced] in
        signal()
        // A commit moved the version: the path is looked at once subscribers are woken,
        // not before (two system calls off the delivery path). A replacement that came
        // with the commit still wakes them, now to read the error.
        if replaced() { signal() }
      })
    watcher.withLock { $0 = created }
    return created.mode
  }

  func stop() {
    let stopping = watcher.withLock { watcher in
      defer { watcher = nil }
      return watcher
    }
    stopping?.stop()
    last.withLock { $0 = nil }
  }

  /// Whether `PRAGMA data_version` moved since the last call (another connection
  /// committed), or else the file was replaced: either way subscribers must read again.
  /// When the version moved, the path is looked at after the wake-up (see ``start(signal:)``).
  private func hasChanged(waiting: Bool) -> Bool {
    let read: Version?
    do {
      read = try version(waiting)
    } catch {
      // Harmless to swallow: a yes costs subscribers one re-read, and that read reports
      // the same failure to them as an error; a no could leave them waiting.
      return true
    }
    guard let current = read else { return replaced() }
    let moved = last.withLock { last in
      defer { last = current }
      return last != current
    }
    return moved || replaced()
  }
}

/// A connection opened by `open` when it is first used, then kept; used under its lock.
/// A failed open leaves it closed, and the next use tries again.
final class LazyConnection: Sendable {
  private let connection = Mutex<Connection?>(nil)
  private let open: @Sendable () throws -> sending Connection

  init(_ open: @escaping @Sendable () throws -> sending Connection) { self.open = open }

  /// Runs `body` on the connection, opened first if it is not yet, under its lock.
  func withLock<Result>(_ body: (Connection) throws -> sending Result) throws -> sending Result {
    try connection.withLock { connection in
      if let existing = connection { return try body(existing) }
      let opened = try open()
      connection = opened
      return try body(opened)
    }
  }
}
