import CSQLite
import Dispatch
import Foundation
import SessionStorage
import Synchronization

/// Subscribers in this process, ours or raw, that report what they receive to ``Arrivals``.
final class InProcessSubscribers {
  private var tasks: [Task<Void, Never>] = []
  private let done = DispatchSemaphore(value: 0)
  private var rawWakes: [DispatchSemaphore] = []
  private let stopping = StopFlag()

  /// Subscribes `count` times to `store.changes(from: .now)`, each iterated by a task.
  func subscribe(_ count: Int, to store: SessionStore, arrivals: Arrivals) throws {
    for _ in 0..<count {
      let changes = try store.changes(from: .now)
      let done = self.done
      tasks.append(
        Task.detached {
          do {
            for try await entry in changes { arrivals.arrive(entry.cursor.value, at: Monotonic.now()) }
          } catch {
            FileHandle.standardError.write(Data("subscriber failed: \(error)\n".utf8))
          }
          done.signal()
        })
    }
  }

  /// Starts `count` raw subscriber threads on `path`, each with its own connection: it
  /// sleeps on a semaphore that ``wakeRaw()`` signals after a commit, then reads the new
  /// rows with a prepared SELECT.
  func startRaw(_ count: Int, path: String, head: Int64, arrivals: Arrivals) {
    for _ in 0..<count {
      let wake = DispatchSemaphore(value: 0)
      rawWakes.append(wake)
      let (done, stopping) = (self.done, self.stopping)
      let thread = Thread {
        defer { done.signal() }
        do {
          let db = try RawDB(path: path)
          let select = try db.prepareChanges(limit: 256)
          var last = head
          while true {
            wake.wait()
            if stopping.isSet { return }
            RawDB.readChanges(select, after: last) { cursor in
              last = cursor
              arrivals.arrive(cursor, at: Monotonic.now())
            }
          }
        } catch {
          FileHandle.standardError.write(Data("raw subscriber failed: \(error)\n".utf8))
        }
      }
      thread.start()
    }
  }

  /// Wakes every raw subscriber thread.
  func wakeRaw() {
    for wake in rawWakes { wake.signal() }
  }

  /// Cancels the tasks, stops the threads, and waits until all have ended.
  func stop() {
    for task in tasks { task.cancel() }
    stopping.set()
    wakeRaw()
    for _ in 0..<(tasks.count + rawWakes.count) { done.wait() }
    tasks = []
    rawWakes = []
  }

  deinit { stop() }
}

/// A flag the raw subscriber threads read after each wake-up.
private final class StopFlag: Sendable {
  private let value = Atomic(false)

  var isSet: Bool { value.load(ordering: .acquiring) }

  func set() { value.store(true, ordering: .releasing) }
}
