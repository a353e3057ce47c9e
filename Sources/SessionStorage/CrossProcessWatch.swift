import FeedKit
import Foundation
import Synchronization

/// Wakes a store's subscribers when another process (or the sqlite3 shell) commits: a
/// ``ChangeWatcher`` on the database's directory, re-checking `PRAGMA data_version` on a
/// connection of its own. Runs only while the store has subscribers.
final class CrossProcessWatch: Sendable {
  private let path: String
  private let busyTimeout: Duration
  private let watcher = Mutex<ChangeWatcher?>(nil)
  private let probe = Mutex<(connection: Connection, last: Int64)?>(nil)

  init(path: String, busyTimeout: Duration) {
    self.path = path
    self.busyTimeout = busyTimeout
  }

  /// Starts watching; `signal` runs on the watcher's thread after each commit noticed.
  func start(signal: @escaping @Sendable () -> Void) {
    let url = URL(fileURLWithPath: path)
    let name = url.lastPathComponent
    probe.withLock { [path, busyTimeout] probe in
      // Without a probe connection every event counts as a change: more re-reads, nothing missed.
      guard let connection = try? Connection(path: path, mode: .readOnly, busyTimeout: busyTimeout),
        let version = try? connection.scalarInt("PRAGMA data_version")
      else { return }
      probe = (connection, version)
    }
    let created = try? ChangeWatcher(
      directory: url.deletingLastPathComponent().path, fileNames: [name, name + "-wal", name + "-journal"],
      hasChanged: { [weak self] in self?.hasChanged() ?? false }, onChange: signal)
    watcher.withLock { $0 = created }
  }

  /// Stops the watcher thread, then closes the probe connection.
  func stop() {
    let stopping = watcher.withLock { watcher in
      defer { watcher = nil }
      return watcher
    }
    stopping?.stop()
    probe.withLock { $0 = nil }
  }

  /// Whether `PRAGMA data_version` moved since the last call: another connection committed.
  /// When it cannot be read, says yes: a spurious wake-up costs a re-read, a missed one a change.
  private func hasChanged() -> Bool {
    probe.withLock { probe in
      guard let current = try? probe?.connection.scalarInt("PRAGMA data_version") else { return true }
      defer { probe?.last = current }
      return current != probe?.last
    }
  }
}
