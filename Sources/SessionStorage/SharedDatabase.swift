import FeedKit
import Foundation
import Synchronization

/// The connections this process holds on one database file, shared by every
/// ``SessionStore`` opened on it, whatever path, symbolic link or relative spelling named
/// the file (it is found by device and inode).
///
/// One file, one set of connections per process: a second instance costs no descriptor,
/// and no instance can disturb another's locks. The file is closed when the last instance
/// (and the last subscription made from one) is released.
final class SharedDatabase: Sendable {
  /// The writer connection and the settings it was last switched to.
  private struct Writer {
    var connection: Connection
    var durability: SessionStore.Durability
  }

  /// The path of the instance that opened the file first; errors name it.
  let path: String
  let log: SessionLog
  let beacon: Beacon
  let feed: Feed<SessionChange, SessionState>
  private let writer: Mutex<Writer?>
  /// One wake-up per commit: a commit of this process wakes subscribers as it returns,
  /// and the cross-process watcher, which sees the same commit move `PRAGMA data_version`,
  /// then finds nothing new and stays quiet.
  private let wakes = WakeOnce()
  /// Where async writes wait for the writer, off their callers' actors.
  let writeQueue = DispatchQueue(label: "SessionStorage.write")

  /// Composes connections the ``Opener`` opened (and migrated): the file's log, its writer
  /// (none for read-only instances), and the watcher that wakes subscribers.
  init(
    _ path: String, _ identity: FileCheck.Identity, _ options: SessionStore.Options,
    reader: sending Connection, readerMode: Connection.Mode, writer: sending Connection?,
    refusal: SessionStorageError? = nil
  ) throws {
    try reader.execute("PRAGMA query_only = ON")
    self.path = path
    let file = OpenedFile(path: path, identity: identity, walExpected: readerMode != .immutable)
    log = SessionLog(reader: reader, file: file, refusal: refusal)
    self.writer = Mutex(writer.map { Writer(connection: $0, durability: options.durability) })
    let watch = CrossProcessWatch(
      path: path, pollInterval: options.safetyPollInterval, dataVersion: { [log] in try log.dataVersion() },
      replaced: { file.noticeReplacement() })
    let log = self.log
    beacon = Beacon(
      activate: { [wakes] beacon in
        beacon.report(
          watch.start { [weak beacon, weak log] in
            // Another process's commit, or one of ours seen again: wake only for a new one.
            // A tip that cannot be read (a replaced file) wakes them: their read says why.
            // Held weakly: a watcher winding down must not keep the file open.
            guard let beacon, let log else { return }
            if wakes.isNew((try? log.tip()) ?? nil) { beacon.signal() }
          })
      },
      deactivate: { watch.stop() })
    feed = Feed(source: log, signal: beacon)
  }

  /// Gives a file opened by read-only instances its writer, made by `open` under the
  /// writer's lock, unless a writable instance gave it one already.
  func addWriter(_ options: SessionStore.Options, _ open: () throws -> sending Connection) throws {
    try writer.withLock { writer in
      guard writer == nil else { return }
      writer = Writer(connection: try open(), durability: options.durability)
    }
  }

  /// Runs `body` on the writer, switched first to this instance's durability and busy
  /// timeout (each instance keeps its own). While it waits for another process's lock, it
  /// gives up as soon as `isCancelled` says so.
  func withWriter<Result: Sendable>(
    _ options: SessionStore.Options, isCancelled: (@Sendable () -> Bool)? = nil,
    _ body: (Connection) throws -> Result
  ) throws -> Result {
    try writer.withLock { writer in
      guard let current = writer else {
        throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
      }
      // A write into a file that was replaced or deleted would be lost to everyone else.
      try log.file.requireSameFile()
      if current.durability != options.durability {
        try current.connection.execute("PRAGMA synchronous = \(options.durability.pragmaValue)")
        writer?.durability = options.durability
      }
      current.connection.busyTimeout = options.busyTimeout
      current.connection.isCancelled = isCancelled
      defer { current.connection.isCancelled = nil }
      return try body(current.connection)
    }
  }
}

extension SharedDatabase {
  /// Wakes subscribers for a commit this process made.
  func wake(after entry: SessionEntry) {
    _ = wakes.isNew(FeedTip(cursor: entry.cursor, time: entry.time))
    beacon.signal()
  }
}

/// Which change subscribers were last woken for (``SessionLog/tip()``).
final class WakeOnce: Sendable {
  private let wokenFor = Mutex<FeedTip?>(nil)

  /// Records that subscribers are woken for `tip`; whether it is another one than last time
  /// (an unknown tip always is).
  func isNew(_ tip: FeedTip?) -> Bool {
    wokenFor.withLock { woken in
      defer { woken = tip }
      return tip == nil || tip != woken
    }
  }
}

/// The newest change ever recorded: its cursor and time. A restore of an older backup can
/// put another change under the same cursor, never at the same millisecond as well.
struct FeedTip: Equatable, Sendable {
  var cursor: Cursor
  var time: Date
}
