import Dispatch
import Foundation
import SessionStorage
import Synchronization
import SystemKit
import ToolingKit

/// `mem-subscriptions`, `mem-watcher`, `mem-idle-subscriber`: the resident memory of a
/// process that subscribes, read from its `/proc/PID/status` by sessionbench. The subscriber
/// is a child process (`sessionbench child-holder`, or the raw watcher), so that nothing
/// sessionbench itself allocated counts. The changes are written by sessionbench, a
/// connection in another process: raw `sqlite3_*` calls running the store's own UPDATE (its
/// trigger appends the change rows), 1,000 changes per transaction. Every scenario counts
/// what its subscribers received and fails unless that is every change, in order.
enum MemoryScenario {
  /// Changes per writer transaction.
  static let batch = 1_000

  /// The aim of `mem-subscriptions`, in KiB per subscription.
  static let perSubscriptionAim = 8.0

  /// The aim of `mem-watcher` and `mem-idle-subscriber`: RSS growth, in KiB, from the first
  /// tenth of the changes to all of them. Bounded memory is SQLite's page cache of the
  /// store's two connections (2,000 KiB each by default, which a log of 100,000 changes,
  /// 8 MB on disk, outgrows) and a page of entries; an entry kept per change, at 100 bytes
  /// or more each, would add 8,800 KiB or more for 90,000 changes.
  static let growthAim = 4_096

  /// How long a subscriber may take to receive what was written: a hang guard.
  static let deliveryTimeout: Duration = .seconds(180)
  /// How long sessionbench waits for the answer of a child that waits that long.
  static let answerTimeout = deliveryTimeout + .seconds(30)

  /// `mem-subscriptions`: a child opens the store and reads its state (start), then holds
  /// N subscriptions from now, each iterated by a task of its own; one change is written,
  /// and once all N received it the resident set is read again (end). The difference per
  /// subscription is the figure (it includes the cross-process watcher that the first
  /// subscription starts, a thread and an inotify descriptor, shared by all).
  static func subscriptions(scale: Scale) throws -> Outcome {
    let name = "mem-subscriptions"
    let workspace = try Workspace(name)
    _ = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    let writer = try RawWriter(db: RawDB(path: workspace.ours, synchronous: "NORMAL"))
    let child = try BenchChild(["child-holder", "--db", workspace.ours], arrivals: nil)
    defer { child.finish() }
    try child.waitUntilReady()
    settle()
    let start = try ResidentSet.of(child.pid)
    let count = scale.subscriptions
    try expect(child.ask("subscribe \(count)", within: .seconds(120)), "subscribed \(count)")
    guard try writer.write(login: true) else { throw BenchError("the write changed nothing") }
    try expect(child.ask("await \(count)", within: answerTimeout), "delivered \(count)")
    let end = try ResidentSet.of(child.pid)
    let perSubscription = Double(end.current - start.current) / Double(count)
    return Outcome(
      measurements: [
        Measurement(scenario: name, metric: .rssStart, ours: Double(start.current), baseline: nil),
        Measurement(scenario: name, metric: .rssEnd, ours: Double(end.current), baseline: nil),
        Measurement(scenario: name, metric: .kibPerSubscription, ours: perSubscription, baseline: nil),
      ],
      verdicts: [
        Verdict(
          scenario: name, aim: String(format: "≤ %g KiB per subscription", perSubscriptionAim),
          measured: String(
            format: "%.2f KiB (%d subscriptions: %d → %d KiB)", perSubscription, count, start.current,
            end.current),
          met: perSubscription <= perSubscriptionAim)
      ])
  }

  /// `mem-watcher`: a child with one subscription from now, iterated by a task, while
  /// 100,000 changes are written; its resident set at the start, once it received the first
  /// tenth, and once it received all of them, and its peak (`VmHWM`). Baseline: the raw
  /// watcher process (``RawWatcher``) on a file of its own, receiving the same writes.
  static func watcher(scale: Scale) throws -> Outcome {
    let name = "mem-watcher"
    let workspace = try Workspace(name)
    _ = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    try workspace.createRawSchema()
    let total = scale.memoryChanges

    let oursChild = try BenchChild(["child-holder", "--db", workspace.ours], arrivals: nil)
    defer { oursChild.finish() }
    try oursChild.waitUntilReady()
    try expect(oursChild.ask("subscribe 1"), "subscribed 1")
    let ours = try trace(
      writer: RawWriter(db: RawDB(path: workspace.ours, synchronous: "NORMAL")), total: total,
      pid: oursChild.pid
    ) { count in
      try expect(oursChild.ask("await \(count)", within: answerTimeout), "delivered \(count)")
    }
    oursChild.finish()

    let received = DeliveryCount()
    let rawChild = try BenchChild(["child-raw-watcher", "--db", workspace.raw]) { cursor, _ in
      received.receive(cursor)
    }
    defer { rawChild.finish() }
    try rawChild.waitUntilReady()
    let raw = try trace(
      writer: RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL")), total: total,
      pid: rawChild.pid
    ) { count in
      let got = try received.wait(atLeast: count, timeout: deliveryTimeout)
      guard got == count else {
        throw BenchError("the raw watcher received \(got) changes, \(count) were written")
      }
    }
    return outcome(name, ours: ours, raw: raw, total: total)
  }

  /// `mem-idle-subscriber`: a child holds one subscription from now and never reads it
  /// while 100,000 changes are written; its resident set at the start, after the first
  /// tenth, after all of them (each a moment after the writes, for the wake-ups to pass),
  /// and its peak. Then it reads the subscription to the end: it must receive every change,
  /// which shows the subscription was live all along.
  static func idleSubscriber(scale: Scale) throws -> Outcome {
    let name = "mem-idle-subscriber"
    let workspace = try Workspace(name)
    _ = try SessionStore(path: workspace.ours, options: .init(origin: "sessionbench"))
    let writer = try RawWriter(db: RawDB(path: workspace.ours, synchronous: "NORMAL"))
    let total = scale.memoryChanges
    let child = try BenchChild(["child-holder", "--db", workspace.ours], arrivals: nil)
    defer { child.finish() }
    try child.waitUntilReady()
    let holding = try child.ask("hold")
    guard holding.hasPrefix("holding "), let cursor = Int64(holding.dropFirst("holding ".count)) else {
      throw BenchError("child-holder answered '\(holding)' to hold")
    }
    let ours = try trace(writer: writer, total: total, pid: child.pid) { _ in settle() }
    let head = try writer.db.head()
    guard head == cursor + Int64(total) else {
      throw BenchError("\(total) changes were written after \(cursor), and the head is \(head)")
    }
    try expect(child.ask("drain \(head)", within: answerTimeout), "drained \(total)")
    return outcome(name, ours: ours, raw: nil, total: total)
  }

  /// The resident set of one subscriber process as the changes were written.
  struct Trace {
    var start = ResidentSet(current: 0, peak: 0)
    var tenth = ResidentSet(current: 0, peak: 0)
    var end = ResidentSet(current: 0, peak: 0)
    var growth: Int { end.current - tenth.current }
  }

  /// Writes `total` changes, a tenth first, reading `pid`'s resident set before, after the
  /// tenth and at the end; `delivered(n)` returns once the subscriber has received `n`.
  private static func trace(writer: RawWriter, total: Int, pid: pid_t, delivered: (Int) throws -> Void)
    throws -> Trace
  {
    var trace = Trace()
    settle()
    trace.start = try ResidentSet.of(pid)
    let tenth = total / 10
    try HistoryScenario.fill(writer, count: tenth, from: 0, batch: batch)
    try delivered(tenth)
    trace.tenth = try ResidentSet.of(pid)
    try HistoryScenario.fill(writer, count: total - tenth, from: tenth, batch: batch)
    try delivered(total)
    trace.end = try ResidentSet.of(pid)
    return trace
  }

  private static func outcome(_ name: String, ours: Trace, raw: Trace?, total: Int) -> Outcome {
    func row(_ metric: Measurement.Metric, _ figure: (Trace) -> Int) -> Measurement {
      Measurement(
        scenario: name, metric: metric, ours: Double(figure(ours)), baseline: raw.map { Double(figure($0)) })
    }
    let tenth = total / 10
    return Outcome(
      measurements: [
        row(.rssStart) { $0.start.current }, row(.rssTenth) { $0.tenth.current },
        row(.rssEnd) { $0.end.current },
        row(.rssGrowth) { $0.growth }, row(.peakRSS) { $0.end.peak },
      ],
      verdicts: [
        Verdict(
          scenario: name, aim: "RSS(\(count(total))) − RSS(\(count(tenth))) ≤ \(growthAim) KiB",
          measured: "\(ours.growth) KiB (\(ours.tenth.current) → \(ours.end.current) KiB)"
            + (raw.map { ", raw watcher \($0.growth) KiB" } ?? ""),
          met: ours.growth <= growthAim)
      ])
  }

  /// 100000 as "100k".
  private static func count(_ value: Int) -> String {
    value >= 1000 && value.isMultiple(of: 1000) ? "\(value / 1000)k" : String(value)
  }

  /// Lets a child's threads finish what they were doing (starting up, or handling wake-ups).
  private static func settle() { Monotonic.sleep(nanoseconds: 300_000_000) }

  private static func expect(_ answer: String, _ expected: String) throws {
    guard answer == expected else {
      throw BenchError("child-holder answered '\(answer)', expected '\(expected)'")
    }
  }
}

/// A process's resident memory from `/proc/PID/status`, in KiB.
struct ResidentSet: Equatable {
  /// `VmRSS`: resident now.
  let current: Int
  /// `VmHWM`: the most that was resident at once.
  let peak: Int

  /// Reads `/proc/PID/status` of `pid`.
  /// - Throws: ``BenchError`` when the process is gone or the file lacks the figures.
  static func of(_ pid: pid_t) throws -> ResidentSet {
    let path = "/proc/\(pid)/status"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
      throw BenchError("cannot read \(path): process \(pid) is gone")
    }
    // Lines such as "VmRSS:\t   12345 kB".
    func kib(_ field: String) -> Int? {
      guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else {
        return nil
      }
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      return words.count == 3 && words[2] == "kB" ? Int(words[1]) : nil
    }
    guard let current = kib("VmRSS"), let peak = kib("VmHWM") else {
      throw BenchError("\(path) has no VmRSS or VmHWM")
    }
    return ResidentSet(current: current, peak: peak)
  }
}

/// How many entries subscribers received, and a wait until they received a number of them.
/// A subscriber that receives a cursor out of turn records a failure, which the wait throws.
final class DeliveryCount: Sendable {
  private struct State {
    var count = 0
    var failure: String?
    /// The count the waiter waits for; nil when none waits.
    var target: Int?
    /// The last cursor ``receive(_:)`` counted.
    var last: Int64?
  }

  private let state = Mutex(State())
  private let reached = DispatchSemaphore(value: 0)

  /// Counts one entry; wakes the waiter when that reaches its target.
  func add() {
    let wake = state.withLock { state in
      state.count += 1
      return state.target == state.count
    }
    if wake { reached.signal() }
  }

  /// Records that something went wrong (the first failure is kept), and wakes the waiter.
  func fail(_ message: String) {
    let wake = state.withLock { state in
      if state.failure == nil { state.failure = message }
      return state.target != nil
    }
    if wake { reached.signal() }
  }

  /// Counts `cursor` of one subscriber's entries when it is the one after the last it
  /// counted (or the first), else records a failure.
  func receive(_ cursor: Int64) {
    let previous = state.withLock { state in
      defer { state.last = cursor }
      return state.last
    }
    if let previous, cursor != previous + 1 {
      fail("received cursor \(cursor) after \(previous)")
    } else {
      add()
    }
  }

  /// Waits until at least `target` entries were received, and returns the count then.
  /// One thread waits at a time; never call it from a task (it blocks its thread).
  /// - Throws: ``BenchError`` for a recorded failure, or when `timeout` passes first.
  func wait(atLeast target: Int, timeout: Duration) throws -> Int {
    let deadline = DispatchTime.now() + .milliseconds(Int(timeout.milliseconds))
    defer { state.withLock { $0.target = nil } }
    while true {
      let (count, failure) = state.withLock { state in
        state.target = target
        return (state.count, state.failure)
      }
      if let failure { throw BenchError(failure) }
      if count >= target { return count }
      // A signal left by an earlier wait only makes this loop check again.
      if reached.wait(timeout: deadline) == .timedOut {
        let count = state.withLock { $0.count }
        if count >= target { return count }
        throw BenchError("received \(count) of \(target) changes within \(timeout)")
      }
    }
  }
}

/// `sessionbench child-holder --db PATH`: a store that holds subscriptions for the memory
/// scenarios. It opens the store, reads its state, says `ready`, and serves these commands
/// on standard input (one answer line each; `error …` when one fails):
/// - `subscribe N`: N more subscriptions from now, each iterated by a task of its own that
///   counts what it receives and checks it comes in order → `subscribed N`;
/// - `hold`: one subscription from now that nothing iterates → `holding CURSOR`;
/// - `await N`: waits until the iterated subscriptions received N entries in all →
///   `delivered COUNT`;
/// - `drain HEAD`: reads the held subscription up to HEAD → `drained COUNT`.
enum SubscriptionHolder {
  static func run(path: String) throws -> Never {
    let store = try SessionStore(path: path, options: .init(origin: "sessionbench-child"))
    _ = try store.state
    let holder = Holder(store: store)
    ChildChannel.sayReady()
    ChildChannel.serveInput { holder.answer($0) }
    dispatchMain()
  }

  /// What the child holds: the store, the iterating tasks and what they counted, and the
  /// subscriptions nothing iterates.
  private final class Holder: Sendable {
    let store: SessionStore
    let delivered = DeliveryCount()
    let tasks = Mutex<[Task<Void, Never>]>([])
    let held = Mutex<[SessionSubscription]>([])

    init(store: SessionStore) { self.store = store }

    func answer(_ command: String) -> String {
      let words = command.split(separator: " ")
      let number = words.count == 2 ? Int(words[1]) : nil
      do {
        switch (words.first, number) {
        case ("subscribe", let count?):
          try subscribe(count)
          return "subscribed \(count)"
        case ("hold", nil):
          let subscription = try store.changes(from: .now)
          held.withLock { $0.append(subscription) }
          return "holding \(subscription.cursor.value)"
        case ("await", let count?):
          return "delivered \(try delivered.wait(atLeast: count, timeout: MemoryScenario.deliveryTimeout))"
        case ("drain", let head?):
          return "drained \(try drain(to: Int64(head)))"
        default:
          return "error unknown command '\(command)'"
        }
      } catch {
        return "error \(error)"
      }
    }

    private func subscribe(_ count: Int) throws {
      for _ in 0..<count {
        let task = Self.count(try store.changes(from: .now), into: delivered, named: "a subscription")
        tasks.withLock { $0.append(task) }
      }
    }

    /// Reads the first held subscription up to `head`, on a task; this thread (the one
    /// serving standard input, not the cooperative pool's) waits for it.
    private func drain(to head: Int64) throws -> Int {
      guard let subscription = held.withLock({ $0.first }) else { throw BenchError("nothing is held") }
      let drained = DeliveryCount()
      let expected = Int(head - subscription.cursor.value)
      let task = Self.count(subscription, into: drained, until: head, named: "the held subscription")
      defer { task.cancel() }
      return try drained.wait(atLeast: expected, timeout: MemoryScenario.deliveryTimeout)
    }

    /// Iterates `subscription` on a task of its own, counting into `count` each entry whose
    /// cursor follows the one before (else recording a failure), up to `head` when given.
    private static func count(
      _ subscription: SessionSubscription, into count: DeliveryCount, until head: Int64? = nil,
      named name: String
    ) -> Task<Void, Never> {
      Task.detached {
        var last = subscription.cursor.value
        do {
          for try await entry in subscription {
            guard entry.cursor.value == last + 1 else {
              count.fail("\(name) received cursor \(entry.cursor.value) after \(last)")
              return
            }
            last = entry.cursor.value
            count.add()
            if let head, last >= head { return }
          }
        } catch {
          count.fail("\(name) failed: \(error)")
        }
      }
    }
  }
}
