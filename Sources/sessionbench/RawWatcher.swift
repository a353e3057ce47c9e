import CSQLite
import Foundation
import SystemKit

/// `sessionbench child-raw-watcher --db PATH`: the baseline for cross-process delivery,
/// written the way one would in C. `inotify` on the database's directory; after every
/// event on the database or its `-wal`, a `PRAGMA data_version` re-check on a connection
/// of its own; when the commit is not visible yet, re-checks after 1, 2, 5, 10, 20 and
/// 50 ms unless another event comes first; a 1 s re-check as the safety net. A change
/// is read with a prepared SELECT of the new rows. Same output as ``ChildSubscriber``.
enum RawWatcher {
  /// Re-check delays after an event whose commit was not visible yet, in milliseconds.
  static let backoff: [Int32] = [1, 2, 5, 10, 20, 50]

  static func run(path: String) throws -> Never {
    let db = try RawDB(path: path)
    let dataVersion = try db.prepare("PRAGMA data_version")
    let select = try db.prepareChanges()
    var last = try db.head()
    var version = Self.version(dataVersion)

    let url = URL(fileURLWithPath: path)
    let names: Set<String> = [
      url.lastPathComponent, url.lastPathComponent + "-wal", url.lastPathComponent + "-journal",
    ]
    let events: Int32
    do {
      events = try Inotify.watch(url.deletingLastPathComponent().path)
    } catch {
      throw BenchError("inotify: \(error)")
    }
    ChildControl.say("ready \(last)")
    ChildControl.serveStdin()

    var miss: Int?
    while true {
      var descriptor = pollfd(fd: events, events: Int16(POLLIN), revents: 0)
      let ready = poll(&descriptor, 1, miss.map { backoff[$0] } ?? 1000)
      var event = false
      if ready > 0 {
        event = Inotify.drain(events, names: names)
        if !event { continue }
      }
      let current = Self.version(dataVersion)
      if current != version {
        version = current
        RawDB.readChanges(select, after: last) { cursor in
          last = cursor
          ChildControl.say("\(cursor) \(Monotonic.now())")
        }
        miss = nil
      } else if event {
        miss = 0
      } else if let current = miss {
        miss = current + 1 < backoff.count ? current + 1 : nil
      }
    }
  }

  private static func version(_ statement: OpaquePointer) -> Int64 {
    defer { sqlite3_reset(statement) }
    return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1
  }
}
