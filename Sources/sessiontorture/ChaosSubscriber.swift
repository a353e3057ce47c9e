import FeedKit
import Foundation
import SessionStorage
import Synchronization

/// What one in-process subscriber received, kept across its cancellations and resumes.
struct ChaosRecord: Sendable {
  /// How it started (`changes .now`, `values`, …).
  var kind: String
  /// The cursor its first entry must follow; nil for `values`.
  var start: Int64?
  /// Every entry received: cursor and the state after it.
  var entries: [(cursor: Int64, after: ChaosState)] = []
  /// Every value received (`values` subscribers).
  var values: [ChaosState] = []
  /// How it ended, when it ended on its own: an error's description.
  var ended: String?
  /// Whether that end is a typed, documented one (a compacted cursor).
  var endedTyped = false
  /// Whether it was cancelled and not resumed.
  var cancelled = false
  /// How many entries and values it had when the history was last restored: those came
  /// from the history before, and are no longer compared with the log.
  var entriesBeforeRestore = 0
  var valuesBeforeRestore = 0

  /// The cursor of the newest entry, or the start.
  var last: Int64? { entries.last?.cursor ?? start }
}

/// The state as the checker compares it: username and login flag.
struct ChaosState: Hashable, Sendable, CustomStringConvertible {
  var username: String?
  var isLoggedIn: Bool

  init(username: String?, isLoggedIn: Bool) {
    self.username = username
    self.isLoggedIn = isLoggedIn
  }

  init(_ state: SessionState) { self.init(username: state.username, isLoggedIn: state.isLoggedIn) }

  var description: String { "(\(username ?? "nil"), \(isLoggedIn ? "in" : "out"))" }
}

/// An in-process subscriber: a task that appends what it receives to its record.
final class ChaosSubscriber: Sendable {
  let record: Mutex<ChaosRecord>
  private let task = Mutex<Task<Void, Never>?>(nil)

  /// Subscribes through `store` as `kind` says; `recent` is a cursor for `afterRecent`.
  init(_ store: SessionStore, _ kind: ChaosStep.Subscription, recent: Int64) throws {
    record = Mutex(ChaosRecord(kind: kind.rawValue))
    switch kind {
    case .now: try follow(store.changes(from: .now), start: store.bounds().head.value)
    case .beginning:
      try follow(store.changes(from: .beginning), start: store.bounds().firstAvailable.value - 1)
    case .afterRecent: try follow(store.changes(from: .after(Cursor(recent))), start: recent)
    case .snapshot:
      let feed = try store.snapshotAndChanges()
      record.withLock { $0.values = [ChaosState(feed.state)] }
      follow(feed.changes, start: feed.cursor.value)
    case .values:
      let values = store.values()
      run {
        for try await value in values {
          self.record.withLock { $0.values.append(ChaosState(value)) }
        }
      }
    }
  }

  /// Continues `previous`'s record after its last cursor, through `store`.
  init(resuming previous: ChaosSubscriber, _ store: SessionStore) throws {
    let copied = previous.record.withLock { $0 }
    record = Mutex(copied)
    guard let last = copied.last else { return }
    record.withLock { $0.cancelled = false }
    do {
      let changes = try store.changes(from: .after(Cursor(last)))
      run {
        for try await entry in changes {
          self.record.withLock { $0.entries.append((entry.cursor.value, ChaosState(entry.after))) }
        }
      }
    } catch let error as FeedError {
      record.withLock {
        $0.ended = "\(error)"
        $0.endedTyped = true
      }
    }
  }

  private func follow(_ changes: SessionSubscription, start: Int64) {
    record.withLock { $0.start = start }
    run {
      for try await entry in changes {
        self.record.withLock { $0.entries.append((entry.cursor.value, ChaosState(entry.after))) }
      }
    }
  }

  private func run(_ body: @escaping @Sendable () async throws -> Void) {
    let started = Task {
      do {
        try await body()
        if !Task.isCancelled { self.record.withLock { $0.ended = "the sequence ended" } }
      } catch is CancellationError {
      } catch {
        self.record.withLock {
          $0.ended = "\(error)"
          // Typed and documented: a feed error, or the file replaced under the store.
          $0.endedTyped = error is FeedError || (error as? SessionStorageError)?.code == .fileReplaced
        }
      }
    }
    task.withLock { $0 = started }
  }

  /// Whether it still receives: not cancelled, not ended.
  var isLive: Bool { record.withLock { !$0.cancelled && $0.ended == nil } }

  /// Cancels the task and waits for it to end.
  func cancel() {
    record.withLock { $0.cancelled = true }
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
