import Foundation
import Synchronization
import SystemKit
import ToolingKit

/// A watcher of the `linearize` scenario: `sessionctl watch --json` processes one after
/// another, each killed with SIGKILL after a short random life and the next resumed with
/// `--since CURSOR@TIME` of the last change line received, or `--since CURSOR` of a
/// snapshot received alone (a fresh one, with a snapshot, until a line was received).
/// Checked at the end with etcd's watch guarantees: a snapshot that is the active state the
/// log leads to at its cursor, then cursors in order, none twice, no gap (across restarts
/// too), every line identical to the log's, and the last one brought up to the log's head.
final class LinearizeWatcher: Sendable {
  /// One `watch` process: where it resumed, what it printed, how it ended.
  struct Instance: Sendable {
    /// The cursor it resumed after, with the time of that change when it was known.
    var since: (cursor: Int64, time: String?)?
    var lines: [String]
    var status: Int32
    var killed: Bool
  }

  let index: Int
  let client: LinearizeClient
  let seed: UInt64
  /// The head when the watcher starts: its snapshot is at this cursor or later.
  let startAfter: Int64
  private let instances = Mutex<[Instance]>([])
  private let stopping = Mutex(false)
  private let stopped = DispatchSemaphore(value: 0)

  init(index: Int, client: LinearizeClient, seed: UInt64, startAfter: Int64) {
    self.index = index
    self.client = client
    self.seed = seed
    self.startAfter = startAfter
  }

  /// Starts the restarts on a thread of their own, until ``finish(at:)``.
  func start() {
    let thread = Thread { [self] in
      var random = SplitMix64(seed: seed)
      var resume: (cursor: Int64, time: String?)?
      while !stopping.withLock({ $0 }) {
        // One in four is killed early, maybe before its first line; the others once they
        // printed one (a PostgreSQL `watch` may take a second to start) and a while after.
        let early = random.below(4) == 0
        let lifetime = Duration.milliseconds(early ? random.below(300) : 50 + random.below(600))
        let instance = run(resume, until: nil, within: lifetime, afterFirstLine: !early)
        resume = Self.resumePoint(instance) ?? resume
        instances.withLock { $0.append(instance) }
      }
      stopped.signal()
    }
    thread.name = "linearize watcher \(index)"
    thread.start()
  }

  /// Stops the restarts, then resumes once more and waits (at most 30 s) for the line of
  /// cursor `head`.
  func finish(at head: Int64) {
    stopping.withLock { $0 = true }
    stopped.wait()
    let resume = instances.withLock { $0 }.reversed().lazy.compactMap(Self.resumePoint).first
    if resume?.cursor == head { return }
    let last = run(resume, until: head, within: .seconds(30))
    instances.withLock { $0.append(last) }
  }

  /// Runs one `watch`, resumed after `resume` (or with a snapshot), until it printed the
  /// line of cursor `until` or `lifetime` passed (counted from its first line, printed
  /// within 10 s, with `afterFirstLine`); then SIGKILL.
  private func run(
    _ resume: (cursor: Int64, time: String?)?, until: Int64?, within lifetime: Duration,
    afterFirstLine: Bool = false
  ) -> Instance {
    let arguments = ["watch"] + (resume.map { ["--since", Self.since($0)] } ?? [])
    let stderr = client.scratch + "/watch\(index).stderr"
    guard let child = try? client.spawn(arguments, stderr: stderr) else {
      return Instance(since: resume, lines: [], status: -1, killed: false)
    }
    if let until {
      _ = child.waitForLine(within: lifetime) { JSONLines.object($0).flatMap(JSONLines.cursor) == until }
    } else {
      if afterFirstLine { _ = child.waitForLine(within: .seconds(10)) { _ in true } }
      _ = child.status(within: lifetime)
    }
    let killed = child.termination == nil
    child.kill(SIGKILL)
    let status = client.reap(child)
    var lines = child.lines
    if status != 0 && !killed { lines.append("exited with \(status): \(client.firstLine(of: stderr))") }
    return Instance(since: resume, lines: lines, status: status, killed: killed)
  }

  /// Where the next `watch` resumes after `instance`: its last line's cursor, and the time
  /// of a change line (a snapshot's state time is the active account's, which a change of
  /// another account does not move: not the time of its cursor's change); nil when it
  /// printed none.
  static func resumePoint(_ instance: Instance) -> (cursor: Int64, time: String?)? {
    for line in instance.lines.reversed() {
      guard let object = JSONLines.object(line), let cursor = JSONLines.cursor(object) else { continue }
      switch object["type"] as? String {
      case "snapshot": return (cursor, nil)
      case "change": if let time = object["at"] as? String { return (cursor, time) }
      default: continue
      }
    }
    return nil
  }

  /// `--since`'s value for `resume`: `CURSOR@TIME`, or `CURSOR` without a time.
  static func since(_ resume: (cursor: Int64, time: String?)) -> String {
    resume.time.map { "\(resume.cursor)@\($0)" } ?? String(resume.cursor)
  }

  /// What the watcher found against the log read at the end, whose newest cursor is `head`.
  func check(against log: [Int64: String], head: Int64) -> (problems: [String], delivered: Int, restarts: Int)
  {
    Self.check(
      instances.withLock { $0 }, name: "watcher \(index)", startAfter: startAfter, against: log, head: head)
  }

  /// What the `watch` processes `instances` of one watcher, started once the head was at
  /// `startAfter`, printed, checked against the log, whose newest cursor is `head`.
  static func check(
    _ instances: [Instance], name: String, startAfter: Int64, against log: [Int64: String], head: Int64
  ) -> (problems: [String], delivered: Int, restarts: Int) {
    var problems: [String] = []
    var next: Int64?
    var delivered = 0
    for (number, instance) in instances.enumerated() {
      let place = "\(name), process \(number + 1)"
      var lines = instance.lines
      // A process killed while writing may leave half a line: not received, not resumed from.
      if instance.killed, let last = lines.last, JSONLines.object(last) == nil { lines.removeLast() }
      if !instance.killed && instance.status != 0 {
        problems.append(
          "\(place) (since \(instance.since.map(since) ?? "-")): "
            + (lines.last ?? "exited with \(instance.status)"))
        continue
      }
      if let since = instance.since {
        next = since.cursor + 1
      } else if let first = lines.first {
        guard let object = JSONLines.object(first), object["type"] as? String == "snapshot",
          let cursor = JSONLines.cursor(object)
        else {
          problems.append("\(place): the first line is not a snapshot: \(first)")
          continue
        }
        if next != nil { problems.append("\(place): a snapshot after lines were received") }
        if cursor < startAfter {
          problems.append("\(place): a snapshot at \(cursor), older than \(startAfter)")
        }
        if let expected = activeState(in: log, at: cursor), !sameState(expected, object["state"]) {
          problems.append(
            "\(place): the snapshot \(first) is not the active state the log leads to at \(cursor), \(expected)"
          )
        }
        next = cursor + 1
        lines.removeFirst()
      }
      for line in lines {
        guard let object = JSONLines.object(line), object["type"] as? String == "change",
          let cursor = JSONLines.cursor(object), let expected = next
        else {
          problems.append("\(place): an unreadable line \(line)")
          break
        }
        guard cursor == expected else {
          problems.append(
            "\(place): cursor \(cursor) where \(expected) was due (\(cursor < expected ? "a duplicate or out of order" : "a gap"))"
          )
          break
        }
        if log[cursor] != line {
          problems.append("\(place): delivered \(line), the log has \(log[cursor] ?? "nothing") at \(cursor)")
        }
        delivered += 1
        next = cursor + 1
      }
    }
    if let next, next - 1 != head {
      problems.append("\(name) ended at cursor \(next - 1), the log's head is \(head)")
    } else if next == nil {
      problems.append("\(name) received nothing in \(instances.count) processes")
    }
    return (problems, delivered, instances.count - 1)
  }

  /// The active account's state (a JSON state object) the entries of `log` up to `cursor`
  /// lead to: the state after the newest entry that leaves its account active, or no
  /// username (at that entry's time) after one that ends the active account's turn; nil
  /// when no entry up to it does either.
  static func activeState(in log: [Int64: String], at cursor: Int64) -> [String: Any]? {
    for newer in log.keys.filter({ $0 <= cursor }).sorted(by: >) {
      guard let entry = log[newer].flatMap(JSONLines.object) else { continue }
      if entry["isActive"] as? Bool == true { return entry["after"] as? [String: Any] }
      if entry["wasActive"] as? Bool == true {
        return ["username": NSNull(), "isLoggedIn": false, "updatedAt": entry["at"] ?? NSNull()]
      }
    }
    return nil
  }

  /// Whether two decoded JSON state objects have the same username (or both none), login
  /// state and time.
  static func sameState(_ left: Any?, _ right: Any?) -> Bool {
    guard let left = left as? [String: Any], let right = right as? [String: Any],
      let isLoggedIn = left["isLoggedIn"] as? Bool, let time = left["updatedAt"] as? String,
      left["username"] is String || left["username"] is NSNull
    else { return false }
    return left["username"] as? String == right["username"] as? String
      && (left["username"] is NSNull) == (right["username"] is NSNull)
      && isLoggedIn == right["isLoggedIn"] as? Bool && time == right["updatedAt"] as? String
  }
}
