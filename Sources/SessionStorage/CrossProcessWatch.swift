import FeedKit
import Foundation
import Synchronization

/// Wakes a store's subscribers when another process (or the sqlite3 shell) commits: a
/// ``ChangeWatcher`` on the database's directory, re-checking `PRAGMA data_version` on the
/// store's reader connection (which never writes, so the number moves with every commit of
/// any other connection). Runs only while the store has subscribers.
///
/// The watched names are the file, its `-wal` and its `-journal`; the directory is watched
/// because the WAL is deleted and recreated as connections come and go. SQLite writes the
/// WAL frames before it publishes the commit in shared memory (which raises no file
/// event), hence the watcher's re-checks after each event.
final class CrossProcessWatch: Sendable {
  private let path: String
  private let pollInterval: Duration
  private let dataVersion: @Sendable () throws -> Int64
  private let replaced: @Sendable () -> Bool
  private let watcher = Mutex<ChangeWatcher?>(nil)
  private let last = Mutex<Int64?>(nil)

  /// - Parameters:
  ///   - pollInterval: how often to re-check when no file event comes.
  ///   - dataVersion: `PRAGMA data_version` of a connection that never writes.
  ///   - replaced: whether the path was just found to name another file (or none).
  init(
    path: String, pollInterval: Duration, dataVersion: @escaping @Sendable () throws -> Int64,
    replaced: @escaping @Sendable () -> Bool
  ) {
    self.path = path
    self.pollInterval = pollInterval
    self.dataVersion = dataVersion
    self.replaced = replaced
  }

  /// Starts watching; `signal` runs on the watcher's thread after each commit noticed.
  /// Returns how the watcher is woken (notifications, or a poll and why).
  func start(signal: @escaping @Sendable () -> Void) -> WakeMode {
    _ = hasChanged()  // the baseline
    let url = URL(fileURLWithPath: path)
    let name = url.lastPathComponent
    let created = ChangeWatcher(
      directory: url.deletingLastPathComponent().path, fileNames: [name, name + "-wal", name + "-journal"],
      pollInterval: pollInterval, hasChanged: { [weak self] in self?.hasChanged() ?? false }, onChange: signal
    )
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
  /// committed), or the file was replaced: either way subscribers must read again.
  private func hasChanged() -> Bool {
    if replaced() { return true }
    let current: Int64
    do {
      current = try dataVersion()
    } catch {
      // Harmless to swallow: a yes costs subscribers one re-read, and that read reports
      // the same failure to them as an error; a no could leave them waiting.
      return true
    }
    return last.withLock { last in
      defer { last = current }
      return last != current
    }
  }
}
