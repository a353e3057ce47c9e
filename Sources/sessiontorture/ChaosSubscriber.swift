import FeedKit
import Foundation
import SessionStorage
import Synchronization

/// How a subscriber's sequence ended on its own (not by a cancellation of the driver's).
enum ChaosEnding: Sendable, CustomStringConvertible {
  /// A `FeedError`: typed, and accepted only where the model says why.
  case feed(FeedError)
  /// `SessionStorageError.fileReplaced`: accepted only while the file is renamed over.
  case replaced(String)
  /// Any other error.
  case other(String)
  /// The sequence returned nil although nobody cancelled it.
  case finished

  init(_ error: any Error) {
    switch error {
    case let error as FeedError: self = .feed(error)
    case let error as SessionStorageError where error.code == .fileReplaced: self = .replaced("\(error)")
    default: self = .other("\(error)")
    }
  }

  var description: String {
    switch self {
    case .feed(let error): "FeedError: \(error)"
    case .replaced(let message): "fileReplaced: \(message)"
    case .other(let message): message
    case .finished: "the sequence ended by itself"
    }
  }
}

/// An entry as a subscriber received it, and when (``ChaosClock/now()``).
struct ChaosDelivery: Sendable {
  var entry: SessionEntry
  var receivedAt: UInt64
}

/// A value as a `values()` subscriber received it, and when.
struct ChaosValue: Sendable {
  var state: ChaosState
  var receivedAt: UInt64
}

/// What one in-process subscription received, appended by its task.
struct ChaosRecord: Sendable {
  var entries: [ChaosDelivery] = []
  var values: [ChaosValue] = []
  var ending: ChaosEnding?
}

/// An in-process subscription (`changes(from:)`, `snapshotAndChanges()` or `values()`)
/// followed by a task that appends what it receives to its record; the checker reads the
/// record (``ChaosFollower``).
final class ChaosSubscriber: Sendable {
  let record = Mutex(ChaosRecord())
  /// The cursor the subscription says it starts after (nil for `values`).
  let start: Int64?
  /// The snapshot's state (`snapshotAndChanges`).
  let snapshot: ChaosState?
  /// How the subscription learns of other processes' commits.
  let wakeMode: WakeMode?
  private let task = Mutex<Task<Void, Never>?>(nil)
  private let cancelled = Atomic(false)

  /// Subscribes to `changes` and follows them.
  init(following changes: SessionSubscription) {
    start = changes.cursor.value
    snapshot = nil
    wakeMode = changes.wakeMode
    follow(changes)
  }

  /// Follows a snapshot's changes.
  init(following feed: SessionSnapshotSubscription) {
    start = feed.cursor.value
    snapshot = ChaosState(feed.state)
    wakeMode = feed.changes.wakeMode
    follow(feed.changes)
  }

  /// Follows `values`.
  init(following values: SessionValues) {
    start = nil
    snapshot = nil
    wakeMode = nil
    run {
      for try await value in values {
        let received = ChaosValue(state: ChaosState(value), receivedAt: ChaosClock.now())
        self.record.withLock { $0.values.append(received) }
      }
    }
  }

  private func follow(_ changes: SessionSubscription) {
    run {
      for try await entry in changes {
        let received = ChaosDelivery(entry: entry, receivedAt: ChaosClock.now())
        self.record.withLock { $0.entries.append(received) }
      }
    }
  }

  private func run(_ body: @escaping @Sendable () async throws -> Void) {
    let started = Task {
      do {
        try await body()
        if !self.cancelled.load(ordering: .acquiring) { self.record.withLock { $0.ending = .finished } }
      } catch is CancellationError {
        if !self.cancelled.load(ordering: .acquiring) {
          self.record.withLock { $0.ending = .other("CancellationError without a cancellation") }
        }
      } catch {
        self.record.withLock { $0.ending = ChaosEnding(error) }
      }
    }
    task.withLock { $0 = started }
  }

  /// The entries from `index` on.
  func entries(from index: Int) -> [ChaosDelivery] {
    record.withLock { Array($0.entries[min(index, $0.entries.count)...]) }
  }

  /// The values from `index` on.
  func values(from index: Int) -> [ChaosValue] {
    record.withLock { Array($0.values[min(index, $0.values.count)...]) }
  }

  var ending: ChaosEnding? { record.withLock { $0.ending } }

  /// Cancels the task and waits for it to end (the driver's thread is not one of the
  /// cooperative pool's).
  func cancel() {
    cancelled.store(true, ordering: .releasing)
    let running = task.withLock { $0 }
    running?.cancel()
    let done = DispatchSemaphore(value: 0)
    Task {
      await running?.value
      done.signal()
    }
    done.wait()
  }
}
