import FeedKit
import Foundation
import SessionStorage
import Synchronization
import SystemKit
import ToolingKit

/// One follower of the feed (an in-process subscription or a subscriber process), checked
/// against the model's log: each entry is the next cursor, the model's entry in every field,
/// delivered within the bound; an ending comes only, and in time, where the model says why.
final class ChaosFollower {
  enum Source {
    case task(ChaosSubscriber)
    /// A `sessiontorture subscribe --detail` process.
    case process(ChildProcess)
  }

  enum Kind: String {
    case now, beginning, afterRecent, snapshot, values, process
  }

  let kind: Kind
  /// Its number among the run's followers, for messages.
  let number: Int
  private(set) var source: Source
  /// When it (re)started: nothing is due before.
  private(set) var startedAt: UInt64
  /// The cursor of the last entry verified (or the start).
  private(set) var last: Int64
  /// The model's serial for the entry at ``last``, when one was known there.
  private(set) var lastSerial: Int?
  /// That entry's time (ms), for a resume with `.afterEntry`.
  private(set) var lastTime: Int64?
  /// How many of the source's deliveries (entries, values or lines) were looked at.
  private var looked = 0
  /// For `values`: the first cursor whose state the next value may be.
  var nextValueFrom: Int64 = 0
  /// For `values`: the last value verified.
  private(set) var lastValue: ChaosState?
  /// A snapshot's state, compared with the model at the next verification.
  private var snapshot: (cursor: Int64, state: ChaosState)?
  private(set) var cancelled = false
  /// The ending, once verified.
  private(set) var ending: ChaosEnding?
  /// How many entries and values it delivered (and were verified).
  private(set) var delivered = 0

  init(
    _ number: Int, kind: Kind, source: Source, start: Int64, serial: Int?, time: Int64?,
    snapshot: ChaosState? = nil
  ) {
    self.number = number
    self.kind = kind
    self.source = source
    startedAt = Monotonic.now()
    last = start
    lastSerial = serial
    lastTime = time
    nextValueFrom = start
    self.snapshot = snapshot.map { (start, $0) }
  }

  var isLive: Bool { !cancelled && ending == nil }

  var isProcess: Bool { if case .process = source { true } else { false } }

  var name: String { "follower #\(number) (\(kind.rawValue))" }

  /// Cancels an in-process subscription (after which it delivers nothing more).
  func cancel() {
    if case .task(let subscriber) = source { subscriber.cancel() }
    cancelled = true
  }

  /// Continues after ``last`` with a new subscription.
  func resume(with subscriber: ChaosSubscriber, serial: Int?) {
    source = .task(subscriber)
    looked = 0
    startedAt = Monotonic.now()
    cancelled = false
    lastSerial = serial
  }

  // MARK: Verification

  /// Looks at what arrived since the last call: entries and values against the model, an
  /// ending against what the model allows. Returns the problems (final: a follower that
  /// delivered something wrong stays wrong).
  func verify(_ model: inout ChaosModel, bound: UInt64) -> [String] {
    var problems: [String] = []
    if let (cursor, state) = snapshot {
      snapshot = nil
      if model.state(at: cursor).map({ $0.agrees(with: state) }) != true {
        problems.append(
          "\(name): the snapshot is \(state) at cursor \(cursor), the model's state there is "
            + (model.state(at: cursor)?.description ?? "unknown"))
      }
    }
    let (deliveries, values, ending) = arrivals()
    for delivery in deliveries {
      if let problem = verify(delivery, &model, bound: bound) {
        problems.append(problem)
        return problems
      }
    }
    for value in values {
      if let problem = verify(value, model) {
        problems.append(problem)
        return problems
      }
    }
    if let ending, self.ending == nil {
      self.ending = ending
      if let problem = judge(ending, model) { problems.append(problem) }
    }
    return problems
  }

  /// What arrived since the last look.
  private func arrivals() -> (entries: [ChaosDelivery], values: [ChaosValue], ending: ChaosEnding?) {
    switch source {
    case .task(let subscriber):
      let ending = subscriber.ending
      if kind == .values {
        let values = subscriber.values(from: looked)
        looked += values.count
        return ([], values, ending)
      }
      let entries = subscriber.entries(from: looked)
      looked += entries.count
      return (entries, [], ending)
    case .process(let child):
      let lines = child.lines
      var entries: [ChaosDelivery] = []
      var ending: ChaosEnding?
      let decoder = JSONDecoder()
      for line in lines.dropFirst(looked) {
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        switch words.first {
        case "ready": break
        case "entry":
          guard words.count == 3, let received = UInt64(words[1]),
            let entry = try? decoder.decode(SessionEntry.self, from: Data(words[2].utf8))
          else {
            ending = .other("an unreadable line: \(line)")
            break
          }
          entries.append(ChaosDelivery(entry: entry, receivedAt: received))
        case "ended": ending = ChaosChildLine.ending(line)
        default: ending = .other("an unexpected line: \(line)")
        }
      }
      looked = lines.count
      return (entries, [], ending)
    }
  }

  private func verify(_ delivery: ChaosDelivery, _ model: inout ChaosModel, bound: UInt64) -> String? {
    let cursor = delivery.entry.cursor.value
    guard cursor == last + 1 else {
      return "\(name) delivered \(cursor) after \(last): a gap or a repeat"
    }
    guard cursor <= model.head, model.log[cursor] != nil else {
      return "\(name) delivered \(cursor), which the log does not hold (head \(model.head))"
    }
    let change = delivery.entry.change
    model.learn(
      from: ChaosEntry(
        cursor: cursor, origin: delivery.entry.origin, account: change.account.value,
        before: ChaosState(change.before),
        after: ChaosState(change.after), wasActive: change.wasActive, isActive: change.isActive))
    guard let expected = model.log[cursor] else { return nil }
    if let difference = expected.difference(from: delivery.entry) {
      return "\(name) delivered \(cursor) with \(difference)"
    }
    let due = max(expected.availableAt, startedAt)
    if delivery.receivedAt > due + bound {
      return "\(name) delivered \(cursor) \(Self.milliseconds(delivery.receivedAt - due)) ms after it "
        + "could be read (the bound is \(Self.milliseconds(bound)) ms)"
    }
    last = cursor
    lastSerial = expected.serial
    lastTime = expected.time
    delivered += 1
    return nil
  }

  private func verify(_ value: ChaosValue, _ model: ChaosModel) -> String? {
    let match =
      nextValueFrom <= model.head
      ? (nextValueFrom...model.head).first { model.state(at: $0)?.agrees(with: value.state) == true } : nil
    guard let match else {
      return "\(name) delivered the value \(value.state), which is no state of the log from cursor "
        + "\(nextValueFrom) to \(model.head)"
    }
    nextValueFrom = match + 1
    lastValue = value.state
    delivered += 1
    return nil
  }

  /// Whether the model says the history under ``last`` was rewritten: the head moved back
  /// below it, or the entry there is another one than the one delivered.
  func isRewritten(in model: ChaosModel) -> Bool {
    if model.head < last { return true }
    guard let lastSerial, last >= model.firstAvailable, let entry = model.log[last] else { return false }
    return entry.serial != lastSerial
  }

  /// Nil when the model allows `ending`; else why not.
  private func judge(_ ending: ChaosEnding, _ model: ChaosModel) -> String? {
    switch ending {
    case .feed(.cursorCompacted(let requested, let oldest)):
      if kind != .values, requested.value == last, model.firstAvailableAtMost > last + 1,
        oldest.value > last + 1, oldest.value <= model.firstAvailableAtMost
      {
        return nil
      }
      return "\(name) at \(last) ended with \(ending), but the model keeps cursors from "
        + "\(model.firstAvailable) (head \(model.head))"
    case .feed(.historyRewritten(let cursor, _)):
      if kind != .values, cursor.value == last, isRewritten(in: model) { return nil }
      return "\(name) at \(last) ended with \(ending), but the model's history under it is unchanged"
    default:
      return "\(name) at \(last) ended with \(ending)"
    }
  }

  /// What the follower must do next, and by when (``Monotonic/now()``); nil when it is
  /// where the model is.
  func requirement(_ model: ChaosModel, bound: UInt64) -> (deadline: UInt64, what: String)? {
    guard isLive else { return nil }
    if kind == .values {
      guard lastValue.map({ !$0.agrees(with: model.state) }) ?? true else { return nil }
      return (
        max(model.stateSince, startedAt) + bound,
        "\(name) shows \(lastValue?.description ?? "nothing"), the model \(model.state)"
      )
    }
    if isRewritten(in: model) {
      return (
        max(model.rewrittenAt, startedAt) + bound,
        "\(name) at \(last) did not end although its history was rewritten (head \(model.head))"
      )
    }
    if model.firstAvailable > last + 1 {
      return (
        max(model.compactedAt, startedAt) + bound,
        "\(name) at \(last) did not end although cursors up to \(model.firstAvailable - 1) were compacted"
      )
    }
    guard last < model.head, let next = model.log[last + 1] else { return nil }
    return (
      max(next.availableAt, startedAt) + bound,
      "\(name) is at \(last), the head at \(model.head): \(last + 1) did not arrive"
    )
  }

  /// The subscription's wake mode, when it is not file notifications.
  var polling: String? {
    guard case .task(let subscriber) = source, let mode = subscriber.wakeMode else { return nil }
    if case .polling = mode { return "\(name) polls: \(mode)" }
    return nil
  }

  static func milliseconds(_ nanoseconds: UInt64) -> String {
    String(format: "%.1f", Double(nanoseconds) / 1e6)
  }
}

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

/// An entry as a subscriber received it, and when (``Monotonic/now()``).
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

  init(following changes: SessionSubscription) {
    start = changes.cursor.value
    snapshot = nil
    wakeMode = changes.wakeMode
    follow(changes)
  }

  init(following feed: SessionSnapshotSubscription) {
    start = feed.cursor.value
    snapshot = ChaosState(feed.state)
    wakeMode = feed.changes.wakeMode
    follow(feed.changes)
  }

  init(following values: SessionValues) {
    start = nil
    snapshot = nil
    wakeMode = nil
    run {
      for try await value in values {
        let received = ChaosValue(state: ChaosState(value), receivedAt: Monotonic.now())
        self.record.withLock { $0.values.append(received) }
      }
    }
  }

  private func follow(_ changes: SessionSubscription) {
    run {
      for try await entry in changes {
        let received = ChaosDelivery(entry: entry, receivedAt: Monotonic.now())
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

  func entries(from index: Int) -> [ChaosDelivery] {
    record.withLock { Array($0.entries[min(index, $0.entries.count)...]) }
  }

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
