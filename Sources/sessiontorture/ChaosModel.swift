import FeedKit
import Foundation
import SessionStorage
import ToolingKit

/// A state as the chaos model holds it: the two values a write decides on, and when the
/// state last changed (milliseconds since 1970, as the file stores it).
struct ChaosState: Hashable, Sendable, CustomStringConvertible {
  var username: String?
  var isLoggedIn: Bool
  var updatedAt: Int64

  init(username: String?, isLoggedIn: Bool, updatedAt: Int64) {
    self.username = username
    self.isLoggedIn = isLoggedIn
    self.updatedAt = updatedAt
  }

  init(_ state: SessionState) {
    self.init(
      username: state.username, isLoggedIn: state.isLoggedIn,
      updatedAt: ChaosClock.milliseconds(state.updatedAt))
  }

  /// The time of a state whose entry was deleted (by retention) before the model read it.
  static let unknown = Int64.min

  /// The same state, where a time the model does not know matches any.
  func agrees(with other: ChaosState) -> Bool {
    username == other.username && isLoggedIn == other.isLoggedIn
      && (updatedAt == other.updatedAt || updatedAt == Self.unknown || other.updatedAt == Self.unknown)
  }

  var description: String {
    let time = updatedAt == Self.unknown ? "time unknown" : Timestamp.format(ChaosClock.date(updatedAt))
    return "(\(username ?? "nil"), \(isLoggedIn ? "in" : "out"), \(time))"
  }
}

/// One entry of the model's log: what the file must hold at its cursor, and what every
/// subscriber that delivers that cursor must deliver.
struct ChaosEntry: Sendable {
  var cursor: Int64
  var origin: String
  var before: ChaosState
  /// The state after it; its `updatedAt` is the entry's time.
  var after: ChaosState
  /// Which entry this is, unique across histories: an entry that a restore brings back keeps
  /// its serial, another one written later at the same cursor gets a new one.
  var serial: Int
  /// When subscribers could first read it (``Monotonic/now()``): when its write was
  /// acknowledged, or when a restore brought it back.
  var availableAt: UInt64

  /// When it committed, in milliseconds since 1970.
  var time: Int64 { after.updatedAt }

  /// The events the documentation defines for a change from `before` to `after` ("a logout
  /// first, then a rename, then a login"), written as the table of every case rather than
  /// the library's rules, so that the two are two derivations to compare.
  var events: [SessionEvent] {
    let rename = SessionEvent.usernameChanged(from: before.username, to: after.username)
    let logout = SessionEvent.loggedOut(username: before.username)
    let login = SessionEvent.loggedIn(username: after.username)
    return switch (before.isLoggedIn, after.isLoggedIn, before.username == after.username) {
    case (true, true, true), (false, false, true): []
    case (true, true, false), (false, false, false): [rename]
    case (true, false, true): [logout]
    case (true, false, false): [logout, rename]
    case (false, true, true): [login]
    case (false, true, false): [rename, login]
    }
  }

  /// What differs between this entry and one the library handed out (by a write, a
  /// subscriber or a process that printed it), or nil when it is this entry.
  func difference(from entry: SessionEntry) -> String? {
    var differences: [String] = []
    if ChaosClock.milliseconds(entry.time) != ChaosClock.milliseconds(entry.change.after.updatedAt) {
      differences.append(
        "time \(Timestamp.format(entry.time)) but after.updatedAt \(Timestamp.format(entry.change.after.updatedAt))"
      )
    }
    if entry.change.events != events {
      differences.append("events \(entry.change.events) instead of \(events)")
    }
    let received = ChaosEntry(
      cursor: entry.cursor.value, origin: entry.origin, before: ChaosState(entry.change.before),
      after: ChaosState(entry.change.after), serial: 0, availableAt: 0)
    if let difference = difference(from: received) { differences.append(difference) }
    return differences.isEmpty ? nil : differences.joined(separator: ", ")
  }

  /// What differs between this entry and `other` (a row of the file): cursor, origin,
  /// before and after (a time the model does not know matches any).
  func difference(from other: ChaosEntry) -> String? {
    var differences: [String] = []
    if other.cursor != cursor { differences.append("cursor \(other.cursor) instead of \(cursor)") }
    if other.origin != origin { differences.append("origin '\(other.origin)' instead of '\(origin)'") }
    if !other.before.agrees(with: before) {
      differences.append("before \(other.before) instead of \(before)")
    }
    if !other.after.agrees(with: after) { differences.append("after \(other.after) instead of \(after)") }
    return differences.isEmpty ? nil : differences.joined(separator: ", ")
  }
}

/// The retention policy as the model holds it (the file's `session_retention` row).
struct ChaosPolicy: Hashable, Sendable, CustomStringConvertible {
  var keepLast: Int?
  var maxAgeMilliseconds: Int64?

  static let off = ChaosPolicy()

  init(keepLast: Int? = nil, maxAgeMilliseconds: Int64? = nil) {
    self.keepLast = keepLast
    self.maxAgeMilliseconds = maxAgeMilliseconds
  }

  init(_ retention: Retention) {
    self.init(keepLast: retention.keepLast, maxAgeMilliseconds: retention.maxAge.map(\.milliseconds))
  }

  var retention: Retention {
    Retention(keepLast: keepLast, maxAge: maxAgeMilliseconds.map { .milliseconds($0) })
  }

  var description: String {
    "keep \(keepLast.map(String.init) ?? "all"), max age \(maxAgeMilliseconds.map { "\($0) ms" } ?? "none")"
  }
}

/// What the file must hold, computed from the steps alone: the state, the log with every
/// entry ever written in this history (compacted ones too: subscribers may still deliver
/// them), the head, what compaction and retention must have kept, and the policy.
///
/// A write through the library is predicted before it is made; a write by another client
/// is predicted from the action it was given; where the outcome depends on what cannot be
/// known beforehand (how far a killed writer got, the clock a retention by age reads), the
/// model holds the range of outcomes the rules allow, and learns from the file which one
/// happened (``ChaosModel/learn(firstAvailable:)``), refusing anything outside the range.
struct ChaosModel: Sendable {
  /// Every entry of this history, by cursor (compacted ones included).
  var log: [Int64: ChaosEntry] = [:]
  /// The state before the first entry (the file as created).
  var initial: ChaosState
  var state: ChaosState
  var head: Int64 = 0
  /// The oldest cursor the log must hold (`head + 1` when it must be empty): everything
  /// below was compacted away.
  var firstAvailable: Int64 = 1
  /// The oldest cursor the log may hold: above ``firstAvailable`` only while a retention by
  /// age leaves it open until the next check reads the file.
  var firstAvailableAtMost: Int64 = 1
  var policy = ChaosPolicy.off
  /// When the state became the current one (a commit or a restore).
  var stateSince: UInt64
  /// When ``firstAvailable`` last moved.
  var compactedAt: UInt64 = 0
  /// When the history was last rewritten (a restore).
  var rewrittenAt: UInt64 = 0
  /// A write that was issued and never acknowledged (its writer was killed) and that the
  /// log does not hold: it may still appear, once, as the next entry (its cursor `head +
  /// 1`, exactly as issued), until another entry is written or the history is rewritten.
  var unacknowledged: Unacknowledged?

  /// A write whose writer died before acknowledging it, and the wall clock (ms) around it.
  struct Unacknowledged: Sendable {
    var entry: ChaosEntry
    var window: ClosedRange<Int64>
    var writer: String
  }

  init(initial: ChaosState, at time: UInt64) {
    self.initial = initial
    state = initial
    stateSince = time
  }

  /// The state after `cursor` in this history: the initial state at 0; nil for a cursor the
  /// model never saw.
  func state(at cursor: Int64) -> ChaosState? { cursor == 0 ? initial : log[cursor]?.after }

  /// Learns the time of the entry at `cursor` where the model did not know it (retention
  /// deleted it before the model read the file, and a subscriber delivered it).
  mutating func learn(time: Int64, at cursor: Int64) {
    guard log[cursor]?.after.updatedAt == ChaosState.unknown else { return }
    log[cursor]?.after.updatedAt = time
    if log[cursor + 1] != nil { log[cursor + 1]?.before.updatedAt = time }
    if cursor == head { state.updatedAt = time }
  }

  /// The values `action` leaves, or nil when it changes nothing (the library then writes no
  /// entry and returns nil; the shell's UPDATE changes no row).
  static func values(after action: ChaosStep.Action, from state: ChaosState) -> (
    username: String?, isLoggedIn: Bool
  )? {
    let after: (username: String?, isLoggedIn: Bool)
    switch action {
    case .login(let name): after = (name, true)
    case .logout: after = (state.username, false)
    case .rename(let name): after = (name, state.isLoggedIn)
    }
    return after.username == state.username && after.isLoggedIn == state.isLoggedIn ? nil : after
  }

  /// The entry `action` must write now, by `origin`, at `time` (ms), or nil for a no-op.
  /// The serial and availability are filled in when it is committed.
  func predict(_ action: ChaosStep.Action, origin: String, time: Int64) -> ChaosEntry? {
    guard let values = Self.values(after: action, from: state) else { return nil }
    return ChaosEntry(
      cursor: head + 1, origin: origin, before: state,
      after: ChaosState(username: values.username, isLoggedIn: values.isLoggedIn, updatedAt: time), serial: 0,
      availableAt: 0)
  }

  /// Adds a committed entry (its cursor is `head + 1`), and applies the retention policy
  /// as the feed trigger does: the newest `keepLast` are kept exactly; the age limit is
  /// applied with ``retainByAge(window:)`` once the window of the write's clock is known.
  mutating func commit(_ entry: ChaosEntry) {
    // Another entry at `head + 1`: an unacknowledged write can no longer be the next one.
    unacknowledged = nil
    head = entry.cursor
    log[entry.cursor] = entry
    state = entry.after
    stateSince = entry.availableAt
    // An empty log had `firstAvailable == head + 1` already: the new entry is its oldest.
    firstAvailableAtMost = max(firstAvailableAtMost, firstAvailable)
    if let keep = policy.keepLast { compact(to: head - Int64(keep) + 1, at: entry.availableAt) }
  }

  /// Everything below `cursor` must be gone (no effect on what is gone already).
  mutating func compact(to cursor: Int64, at time: UInt64) {
    let bound = min(cursor, head + 1)
    if bound > firstAvailable {
      firstAvailable = bound
      compactedAt = time
    }
    firstAvailableAtMost = max(firstAvailableAtMost, firstAvailable)
  }

  /// The first cursor from ``firstAvailable`` on whose entry is young enough for `cutoff`
  /// (its time `cutoff` ms or later), or nil when none is. An entry whose time the model
  /// does not know may be either: it counts as young when `unknownIsYoung` (the search for
  /// the fewest entries a deletion must take), as old otherwise (for the most it may take).
  func firstAtOrAfter(_ cutoff: Int64, unknownIsYoung: Bool) -> Int64? {
    guard firstAvailable <= head else { return nil }
    return (firstAvailable...head).first { cursor in
      guard let time = log[cursor]?.time, time != ChaosState.unknown else { return unknownIsYoung }
      return time >= cutoff
    }
  }

  /// The range the feed trigger's age limit leaves for the oldest entry, when the write
  /// that ran it read a clock (ms) within `window`: the trigger deletes the entries before
  /// the first one young enough, and never the one just written (the newest), however long
  /// the write went on after reading its clock: with a window longer than the age, no entry
  /// may be young enough for its end, and the oldest may then be the newest.
  func ageBound(window: ClosedRange<Int64>) -> ClosedRange<Int64>? {
    guard let age = policy.maxAgeMilliseconds, firstAvailable <= head else { return nil }
    let slack = ChaosClock.cutoffSlack
    let low = firstAtOrAfter(window.lowerBound - age - slack, unknownIsYoung: true) ?? head
    let high = firstAtOrAfter(window.upperBound - age + slack, unknownIsYoung: false) ?? head
    // Entry times need not rise with cursors (writers of several processes stamp them), so
    // the two searches may come back in either order.
    return max(min(low, high), firstAvailable)...max(low, high, firstAvailable)
  }

  /// The range `compact(olderThan:)` (and the age part of `setRetention`) leaves for the
  /// oldest entry: everything before the first entry young enough, all of them when none is.
  func olderThanBound(age: Int64, window: ClosedRange<Int64>) -> ClosedRange<Int64> {
    let slack = ChaosClock.cutoffSlack
    let low = firstAtOrAfter(window.lowerBound - age - slack, unknownIsYoung: true) ?? (head + 1)
    let high = firstAtOrAfter(window.upperBound - age + slack, unknownIsYoung: false) ?? (head + 1)
    return max(min(low, high), firstAvailable)...max(low, high, firstAvailable)
  }

  /// The retention by age of the writes a step made with the clock within `window` (ms):
  /// the oldest entry is somewhere in the range, to be learned from the file.
  mutating func retainByAge(window: ClosedRange<Int64>, at time: UInt64) {
    guard let range = ageBound(window: window) else { return }
    allow(range, at: time)
  }

  /// The oldest entry is somewhere in `range` until the file says where.
  mutating func allow(_ range: ClosedRange<Int64>, at time: UInt64) {
    compact(to: range.lowerBound, at: time)
    firstAvailableAtMost = max(firstAvailableAtMost, range.upperBound, firstAvailable)
  }

  /// Takes the oldest cursor the file holds (`head + 1` for an empty log) when the model
  /// allows it; returns why not otherwise.
  mutating func learn(firstAvailable found: Int64, at time: UInt64) -> String? {
    guard found >= firstAvailable, found <= firstAvailableAtMost else {
      return firstAvailable == firstAvailableAtMost
        ? "the oldest cursor is \(found), the model says \(firstAvailable)"
        : "the oldest cursor is \(found), the model says \(firstAvailable)…\(firstAvailableAtMost)"
    }
    if found > firstAvailable { compactedAt = time }
    firstAvailable = found
    firstAvailableAtMost = found
    return nil
  }

  /// What a new subscription must start after, or the error it must throw.
  enum Start: Equatable {
    case after(Int64, serial: Int?)
    case error(FeedError)
  }

  /// How `changes(from: .after(cursor))` must start.
  func start(after cursor: Int64) -> Start {
    if cursor > head { return .error(.cursorAhead(requested: Cursor(cursor), head: Cursor(head))) }
    if cursor < head, firstAvailable > cursor + 1 {
      return .error(.cursorCompacted(requested: Cursor(cursor), oldestAvailable: Cursor(firstAvailable)))
    }
    return .after(cursor, serial: cursor >= firstAvailable ? log[cursor]?.serial : nil)
  }

  /// How `changes(from: .afterEntry(cursor, time:))` must start, for the entry `serial`
  /// that was delivered at `cursor`.
  func start(afterEntry cursor: Int64, serial: Int) -> Start {
    if cursor > head {
      return .error(
        .historyRewritten(cursor: Cursor(cursor), reason: "the newest cursor is now \(Cursor(head))"))
    }
    if cursor < head, firstAvailable > cursor + 1 {
      return .error(.cursorCompacted(requested: Cursor(cursor), oldestAvailable: Cursor(firstAvailable)))
    }
    if cursor >= firstAvailable, let entry = log[cursor], entry.serial != serial {
      return .error(
        .historyRewritten(
          cursor: Cursor(cursor),
          reason: "the entry at \(cursor) committed at another time than the one given: the log was rewritten"
        ))
    }
    return .after(cursor, serial: cursor >= firstAvailable ? log[cursor]?.serial : nil)
  }

  /// Where `.beginning` starts: before the oldest kept entry, or at the head when none is.
  var beginning: Int64 { firstAvailable <= head ? firstAvailable - 1 : head }
}

/// The clocks the driver compares: a monotonic one shared by every process of the machine
/// (`CLOCK_MONOTONIC`), for delivery times, and the wall clock SQLite stamps entries with.
enum ChaosClock {
  /// The wall clock in milliseconds since 1970.
  static func wallMilliseconds() -> Int64 { milliseconds(Date()) }

  static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

  static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

  /// How far SQLite's cutoff for an age (`julianday('now') - age`, printed to the
  /// millisecond) may stray from the driver's arithmetic.
  static let cutoffSlack: Int64 = 5

  /// Milliseconds between two ``now()`` readings.
  static func milliseconds(from start: UInt64, to end: UInt64) -> Double {
    end >= start ? Double(end - start) / 1e6 : -Double(start - end) / 1e6
  }
}
