import CSQLite
import Foundation

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
    let events = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    let mask = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_CLOSE_WRITE)
    guard events >= 0, inotify_add_watch(events, url.deletingLastPathComponent().path, mask) >= 0 else {
      throw BenchError("inotify: \(String(cString: strerror(errno)))")
    }
    ChildControl.say("ready \(last)")
    ChildControl.serveStdin()

    var miss: Int?
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      var descriptor = pollfd(fd: events, events: Int16(POLLIN), revents: 0)
      let ready = poll(&descriptor, 1, miss.map { backoff[$0] } ?? 1000)
      var event = false
      if ready > 0 {
        event = drain(events, buffer: &buffer, names: names)
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

  /// Reads every pending event; true when one names one of `names`.
  private static func drain(_ fd: Int32, buffer: inout [UInt8], names: Set<String>) -> Bool {
    var relevant = false
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      guard count > 0 else { return relevant }
      buffer.withUnsafeBytes { raw in
        var offset = 0
        while offset + MemoryLayout<inotify_event>.size <= count {
          let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
          let start = offset + MemoryLayout<inotify_event>.size
          let name = raw[start..<min(start + length, count)].prefix { $0 != 0 }
          if names.contains(String(decoding: name, as: UTF8.self)) { relevant = true }
          offset = start + length
        }
      }
    }
  }
}
