import FeedKit
import Foundation
import Synchronization

/// Wakes a store's subscribers when another process (or the sqlite3 shell) commits: a
/// ``ChangeWatcher`` on the database's directory, re-checking `PRAGMA data_version`. Runs
/// only while the store has subscribers.
///
/// The watched names are the file, its `-wal` and its `-journal`; the directory is watched
/// because the WAL is deleted and recreated as connections come and go. SQLite writes the
/// WAL frames before it publishes the commit in shared memory (which raises no file
/// event), hence the watcher's re-checks after each event.
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

  /// Stops the watcher thread.
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
