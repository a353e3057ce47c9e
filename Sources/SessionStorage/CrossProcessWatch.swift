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
  private let target = Mutex<Beacon?>(nil)

  init(path: String, busyTimeout: Duration) {
    self.path = path
    self.busyTimeout = busyTimeout
  }

  /// The beacon to signal; set once, right after the store creates it.
  var beacon: Beacon? {
    get { target.withLock { $0 } }
    set { target.withLock { $0 = newValue } }
  }

  func start() {
    let url = URL(fileURLWithPath: path)
    let name = url.lastPathComponent
    var initial: (connection: Connection, last: Int64)?
    if let connection = try? Connection(path: path, mode: .readOnly, busyTimeout: busyTimeout),
      let current = try? connection.scalarInt("PRAGMA data_version")
    {
      initial = (connection, current)
    }
    let version = Mutex(initial)
    let hasChanged: @Sendable () -> Bool = {
      version.withLock { state in
        guard let current = try? state?.connection.scalarInt("PRAGMA data_version") else { return true }
        defer { state?.last = current }
        return current != state?.last
      }
    }
    let created = try? ChangeWatcher(
      directory: url.deletingLastPathComponent().path, fileNames: [name, name + "-wal", name + "-journal"],
      hasChanged: hasChanged, onChange: { [weak self] in self?.beacon?.signal() })
    watcher.withLock { $0 = created }
  }

  func stop() {
    let stopping = watcher.withLock { watcher in
      defer { watcher = nil }
      return watcher
    }
    stopping?.stop()
  }
}
