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
/// subscriber that delivers that cursor must deliver. It concerns one account: `before` and
/// `after` are that account's states (no username: not in the roster).
struct ChaosEntry: Sendable {
  var cursor: Int64
  var origin: String
  var account: Int64
  var before: ChaosState
  /// The account's state after it; its `updatedAt` is the entry's time.
  var after: ChaosState
  var wasActive: Bool
  var isActive: Bool
  /// Which entry this is, unique across histories: an entry that a restore brings back keeps
  /// its serial, another one written later at the same cursor gets a new one.
  var serial: Int
  /// When subscribers could first read it (``Monotonic/now()``): when its write was
  /// acknowledged, or when a restore brought it back.
  var availableAt: UInt64
  /// The active account's state after it (what the `session` view and `values()` show), and
  /// the cursor of the entry whose time that state carries (0: the file's creation); the
  /// model fills both in when it commits the entry.
  var active = ChaosState(username: nil, isLoggedIn: false, updatedAt: ChaosState.unknown)
  var activeTimeFrom: Int64 = 0

  init(
    cursor: Int64, origin: String, account: Int64, before: ChaosState, after: ChaosState, wasActive: Bool,
    isActive: Bool, serial: Int = 0, availableAt: UInt64 = 0
  ) {
    self.cursor = cursor
    self.origin = origin
    self.account = account
    self.before = before
    self.after = after
    self.wasActive = wasActive
    self.isActive = isActive
    self.serial = serial
    self.availableAt = availableAt
  }

  /// When it committed, in milliseconds since 1970.
  var time: Int64 { after.updatedAt }

  /// Sets its time; an account that joins has that time before it too.
  mutating func setTime(_ time: Int64) {
    after.updatedAt = time
    if before.username == nil { before.updatedAt = time }
  }

  /// The events the documentation defines for the change ("the account joins, signs out,
  /// is renamed, signs in, becomes active or stops being so, leaves"), written as the table
  /// of every case rather than the library's rules, so that the two are two derivations to
  /// compare.
  var events: [SessionEvent] {
    let (old, new) = (before.username, after.username)
    switch (old == nil, new == nil) {
    case (true, false):
      // Joins: signed in or not, active or not.
      return switch (after.isLoggedIn, isActive) {
      case (false, false): [.added(username: new)]
      case (true, false): [.added(username: new), .loggedIn(username: new)]
      case (false, true): [.added(username: new), .activated(username: new)]
      case (true, true): [.added(username: new), .loggedIn(username: new), .activated(username: new)]
      }
    case (false, true):
      // Leaves: signed out first when it was signed in.
      return before.isLoggedIn
        ? [.loggedOut(username: old), .removed(username: old)] : [.removed(username: old)]
    case (true, true), (false, false):
      let rename = SessionEvent.usernameChanged(from: old, to: new)
      let logout = SessionEvent.loggedOut(username: old)
      let login = SessionEvent.loggedIn(username: new)
      let session: [SessionEvent] =
        switch (before.isLoggedIn, after.isLoggedIn, old == new) {
        case (true, true, true), (false, false, true): []
        case (true, true, false), (false, false, false): [rename]
        case (true, false, true): [logout]
        case (true, false, false): [logout, rename]
        case (false, true, true): [login]
        case (false, true, false): [rename, login]
        }
      let turn: [SessionEvent] =
        switch (wasActive, isActive) {
        case (false, true): [.activated(username: new)]
        case (true, false): [.deactivated(username: new)]
        case (true, true), (false, false): []
        }
      return session + turn
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
      cursor: entry.cursor.value, origin: entry.origin, account: entry.change.account.value,
      before: ChaosState(entry.change.before), after: ChaosState(entry.change.after),
      wasActive: entry.change.wasActive, isActive: entry.change.isActive)
    if let difference = difference(from: received) { differences.append(difference) }
    return differences.isEmpty ? nil : differences.joined(separator: ", ")
  }

  /// What differs between this entry and `other` (a row of the file): cursor, origin,
  /// account, before and after (a time the model does not know matches any), and the active
  /// flags.
  func difference(from other: ChaosEntry) -> String? {
    var differences: [String] = []
    if other.cursor != cursor { differences.append("cursor \(other.cursor) instead of \(cursor)") }
    if other.origin != origin { differences.append("origin '\(other.origin)' instead of '\(origin)'") }
    if other.account != account { differences.append("account \(other.account) instead of \(account)") }
    if !other.before.agrees(with: before) {
      differences.append("before \(other.before) instead of \(before)")
    }
    if !other.after.agrees(with: after) { differences.append("after \(other.after) instead of \(after)") }
    if other.wasActive != wasActive || other.isActive != isActive {
      differences.append(
        "active \(other.wasActive) → \(other.isActive) instead of \(wasActive) → \(isActive)")
    }
    return differences.isEmpty ? nil : differences.joined(separator: ", ")
  }

  /// `account 3 (alice, in, …) → (bob, in, …), active → active`.
  var change: String {
    "account \(account) \(before) → \(after), \(wasActive ? "active" : "inactive") → "
      + (isActive ? "active" : "inactive")
  }
}

/// An account of the model's roster.
struct ChaosAccount: Hashable, Sendable {
  var username: String
  var isLoggedIn: Bool
  /// The time of its newest entry (ms), ``ChaosState/unknown`` until the model learns it.
  var updatedAt: Int64
  /// The cursor of its newest entry.
  var cursor: Int64

  var state: ChaosState { ChaosState(username: username, isLoggedIn: isLoggedIn, updatedAt: updatedAt) }
}

/// What a write must do, by the rules of its writer.
enum ChaosPrediction: Sendable {
  /// Commit this entry (its time left to fill in).
  case change(ChaosEntry)
  /// Change nothing: the library returns nil, `sessionctl` prints `noChange`, the shell's
  /// UPDATE changes no row.
  case none
  /// Refuse, writing nothing: why (the library's error code, or the schema's refusal).
  case refused(String)

  var entry: ChaosEntry? { if case .change(let entry) = self { entry } else { nil } }

  var description: String {
    switch self {
    case .change(let entry): entry.change
    case .none: "no change"
    case .refused(let why): "a refusal (\(why))"
    }
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

/// What the file must hold, computed from the steps alone: the roster (accounts by
/// identifier, the active one, the next identifier), the log with every entry ever written
/// in this history (compacted ones too: subscribers may still deliver them), the head, what
/// compaction and retention must have kept, and the policy.
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
  /// The roster: every account, by identifier.
  var accounts: [Int64: ChaosAccount] = [:]
  /// The active account's identifier, nil when none is.
  var activeID: Int64?
  /// When the active account last changed to none (ms), and the cursor of the entry that
  /// did it (0: the file's creation).
  var activeSince: Int64
  var activeSinceCursor: Int64 = 0
  /// The identifier the next account that joins gets: identifiers are 1, 2, … and never
  /// reused.
  var nextID: Int64 = 1
  var head: Int64 = 0
  /// The oldest cursor the log must hold (`head + 1` when it must be empty): everything
  /// below was compacted away.
  var firstAvailable: Int64 = 1
  /// The oldest cursor the log may hold: above ``firstAvailable`` only while a retention by
  /// age leaves it open until the next check reads the file.
  var firstAvailableAtMost: Int64 = 1
  var policy = ChaosPolicy.off
  /// When the active state last changed (a commit or a restore).
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

  /// Whose rules a write follows: the library's (``SessionStore``, `sessionctl`), those of
  /// the `session` view an outside client's `UPDATE session SET …` goes through, or those of
  /// the roster's tables, which an outside client's `UPDATE accounts`, `UPDATE
  /// active_account` and `DELETE FROM accounts` edit.
  enum Rules: Sendable {
    case library, view, tables

    /// The rules an outside client's SQL for `action` follows: the view's for what the
    /// `session` view does (login, logout, rename of the active account), the tables' for
    /// what names an account.
    static func outside(_ action: ChaosStep.Action) -> Rules {
      switch action {
      case .login, .logout, .rename: .view
      case .logoutOf, .renameOf, .switchTo, .remove, .logoutAll: .tables
      }
    }
  }

  init(initial: ChaosState, at time: UInt64) {
    self.initial = initial
    activeSince = initial.updatedAt
    stateSince = time
  }

  /// The active account's state: no username and signed out, since the active account last
  /// changed to none, when none is active.
  var state: ChaosState {
    activeID.flatMap { accounts[$0]?.state }
      ?? ChaosState(username: nil, isLoggedIn: false, updatedAt: activeSince)
  }

  /// The cursor of the entry whose time ``state`` carries (0: the file's creation).
  var stateTimeFrom: Int64 { activeID.flatMap { accounts[$0]?.cursor } ?? activeSinceCursor }

  /// The account with this username (as Swift compares strings), with its identifier.
  func account(named name: String) -> (id: Int64, account: ChaosAccount)? {
    accounts.first { $0.value.username == name }.map { ($0.key, $0.value) }
  }

  /// The active state after `cursor` in this history: the initial state at 0; nil for a
  /// cursor the model never saw.
  func state(at cursor: Int64) -> ChaosState? { cursor == 0 ? initial : log[cursor]?.active }

  /// The cursor of the entry before `cursor` that concerns `account`, or nil.
  func previous(of account: Int64, before cursor: Int64) -> Int64? {
    var candidate = min(cursor, head + 1) - 1
    while candidate > 0 {
      if log[candidate]?.account == account { return candidate }
      candidate -= 1
    }
    return nil
  }

  /// Learns the time of the entry at `cursor` where the model did not know it (retention
  /// deleted it before the model read the file, and a subscriber delivered it): the entry's,
  /// the next one of its account's before it, the active states that carry it, the roster's.
  mutating func learn(time: Int64, at cursor: Int64) {
    guard time != ChaosState.unknown, let entry = log[cursor], entry.after.updatedAt == ChaosState.unknown
    else {
      return
    }
    log[cursor]?.setTime(time)
    if cursor < head,
      let next = (cursor + 1...head).first(where: { log[$0]?.account == entry.account }),
      log[next]?.before.username != nil
    {
      log[next]?.before.updatedAt = time
    }
    for (other, later) in log where later.activeTimeFrom == cursor { log[other]?.active.updatedAt = time }
    if accounts[entry.account]?.cursor == cursor { accounts[entry.account]?.updatedAt = time }
    if activeSinceCursor == cursor { activeSince = time }
    if let unacknowledged, unacknowledged.entry.account == entry.account,
      unacknowledged.entry.before.username != nil
    {
      self.unacknowledged?.entry.before.updatedAt = time
    }
  }

  /// Learns the times a row or a delivered entry at `cursor` shows: its own, and its
  /// account's before it (the time of the account's previous entry).
  mutating func learn(from entry: ChaosEntry) {
    learn(time: entry.after.updatedAt, at: entry.cursor)
    guard entry.before.username != nil, let previous = previous(of: entry.account, before: entry.cursor)
    else {
      return
    }
    learn(time: entry.before.updatedAt, at: previous)
  }

  /// `entry` with its `before` taken from the roster as it stands (for an entry predicted
  /// earlier, whose account's time the model has learned since).
  func rebased(_ entry: ChaosEntry) -> ChaosEntry {
    var entry = entry
    if let account = accounts[entry.account] { entry.before = account.state }
    return entry
  }

  /// What `action` must do now, by `origin`, under `rules`: the entry it must write (cursor
  /// `head + 1`, time unknown), no change, or a refusal. The serial and availability are
  /// filled in when it is committed.
  ///
  /// The library (`SessionWrite.plan`): a login signs in an account of that name and makes it
  /// active, or adds a new one, signed in and active; a logout signs out the active one; a
  /// rename renames the active one (refused when another account holds the name) or, with
  /// none active, adds an account of that name, signed out and active; a logout of a named
  /// account signs it out; a switch activates an account; a removal takes it out (none is
  /// active after the active one leaves); each refused when no account has the name. The
  /// view: an UPDATE sets the active account's columns (refused by the UNIQUE constraint when
  /// another account holds the name); with none active, a username adds an account of that
  /// name, active, and anything else changes nothing. The tables: a statement that names an
  /// account changes what the library's write would, and nothing when no account has the
  /// name; a rename to a name another account holds is refused by the UNIQUE constraint.
  func predict(_ action: ChaosStep.Action, origin: String, rules: Rules = .library) -> ChaosPrediction {
    let unknown = ChaosState.unknown
    let active = activeID.flatMap { id in accounts[id].map { (id: id, account: $0) } }
    func join(_ name: String, loggedIn: Bool) -> ChaosPrediction {
      guard accounts.count < SessionRoster.limit else { return .refused("rosterFull") }
      return .change(
        ChaosEntry(
          cursor: head + 1, origin: origin, account: nextID,
          before: ChaosState(username: nil, isLoggedIn: false, updatedAt: unknown),
          after: ChaosState(username: name, isLoggedIn: loggedIn, updatedAt: unknown), wasActive: false,
          isActive: true))
    }
    func change(
      _ id: Int64, _ account: ChaosAccount, username: String? = nil, isLoggedIn: Bool? = nil,
      isActive: Bool? = nil
    ) -> ChaosPrediction {
      let wasActive = id == activeID
      let after = ChaosState(
        username: username ?? account.username, isLoggedIn: isLoggedIn ?? account.isLoggedIn,
        updatedAt: unknown)
      let nowActive = isActive ?? wasActive
      if after.username == account.username, after.isLoggedIn == account.isLoggedIn, nowActive == wasActive {
        return .none
      }
      return .change(
        ChaosEntry(
          cursor: head + 1, origin: origin, account: id, before: account.state, after: after,
          wasActive: wasActive, isActive: nowActive))
    }
    func taken(_ name: String, byOtherThan id: Int64?) -> Bool {
      account(named: name).map { $0.id != id } ?? false
    }
    func removal(_ id: Int64, _ existing: ChaosAccount) -> ChaosPrediction {
      .change(
        ChaosEntry(
          cursor: head + 1, origin: origin, account: id, before: existing.state,
          after: ChaosState(username: nil, isLoggedIn: false, updatedAt: unknown), wasActive: id == activeID,
          isActive: false))
    }
    switch rules {
    case .library:
      switch action {
      case .login(let name):
        if let (id, existing) = account(named: name) {
          return change(id, existing, username: name, isLoggedIn: true, isActive: true)
        }
        return join(name, loggedIn: true)
      case .logout:
        guard let active else { return .none }
        return change(active.id, active.account, isLoggedIn: false)
      case .rename(let name):
        guard let active else {
          return taken(name, byOtherThan: nil) ? .refused("usernameTaken") : join(name, loggedIn: false)
        }
        if taken(name, byOtherThan: active.id) { return .refused("usernameTaken") }
        return change(active.id, active.account, username: name)
      case .logoutOf(let name):
        guard let (id, existing) = account(named: name) else { return .refused("accountNotFound") }
        return change(id, existing, isLoggedIn: false)
      case .renameOf(let name, let newName):
        guard let (id, existing) = account(named: name) else { return .refused("accountNotFound") }
        if taken(newName, byOtherThan: id) { return .refused("usernameTaken") }
        return existing.username == newName ? .none : change(id, existing, username: newName)
      case .logoutAll:
        preconditionFailure("a logout of every account writes several entries: signingOutEveryone")
      case .switchTo(let name):
        guard let (id, existing) = account(named: name) else { return .refused("accountNotFound") }
        return change(id, existing, isActive: true)
      case .remove(let name):
        guard let (id, existing) = account(named: name) else { return .refused("accountNotFound") }
        return removal(id, existing)
      }
    case .view:
      let set: (username: String?, isLoggedIn: Bool?)
      switch action {
      case .login(let name): set = (name, true)
      case .logout: set = (nil, false)
      case .rename(let name): set = (name, nil)
      case .logoutOf, .renameOf, .switchTo, .remove, .logoutAll:
        return .refused("no UPDATE of session does this")
      }
      guard let active else {
        guard let name = set.username else { return .none }
        return taken(name, byOtherThan: nil)
          ? .refused("UNIQUE") : join(name, loggedIn: set.isLoggedIn ?? false)
      }
      if let name = set.username, taken(name, byOtherThan: active.id) { return .refused("UNIQUE") }
      return change(active.id, active.account, username: set.username, isLoggedIn: set.isLoggedIn)
    case .tables:
      switch action {
      case .logoutOf(let name):
        guard let (id, existing) = account(named: name) else { return .none }
        return change(id, existing, isLoggedIn: false)
      case .renameOf(let name, let newName):
        guard let (id, existing) = account(named: name) else { return .none }
        if taken(newName, byOtherThan: id) { return .refused("UNIQUE") }
        return change(id, existing, username: newName)
      case .switchTo(let name):
        guard let (id, existing) = account(named: name) else { return .none }
        return change(id, existing, isActive: true)
      case .remove(let name):
        guard let (id, existing) = account(named: name) else { return .none }
        return removal(id, existing)
      case .login, .logout, .rename, .logoutAll:
        return .refused("no edit of one account's row does this")
      }
    }
  }

  /// The entries a logout of every account must write now, by `origin`, in the order they
  /// commit: one for each signed-in account, by identifier (none when nobody is signed in).
  func signingOutEveryone(origin: String) -> [ChaosEntry] {
    var model = self
    var entries: [ChaosEntry] = []
    for id in accounts.keys.sorted() {
      guard let account = accounts[id], account.isLoggedIn else { continue }
      let entry = ChaosEntry(
        cursor: model.head + 1, origin: origin, account: id, before: account.state,
        after: ChaosState(username: account.username, isLoggedIn: false, updatedAt: ChaosState.unknown),
        wasActive: id == activeID, isActive: id == activeID)
      model.commit(entry)
      entries.append(entry)
    }
    return entries
  }

  /// Whether `text` (an error's code and message, as a writer reported it) is the refusal
  /// `prediction` says.
  static func isRefusal(_ text: String, _ prediction: ChaosPrediction) -> Bool {
    guard case .refused(let why) = prediction else { return false }
    if text.contains(why) { return true }
    let notFound = text.contains("no account is named '")
    switch why {
    case "usernameTaken": return text.contains("is named '") && !notFound
    case "accountNotFound": return notFound
    case "rosterFull": return text.contains("accounts, its limit")
    default: return false
    }
  }

  /// Adds a committed entry (its cursor is `head + 1`) to the log and the roster, and
  /// applies the retention policy as the feed trigger does: the newest `keepLast` are kept
  /// exactly; the age limit is applied with ``retainByAge(window:)`` once the window of the
  /// write's clock is known.
  mutating func commit(_ entry: ChaosEntry) {
    // Another entry at `head + 1`: an unacknowledged write can no longer be the next one.
    unacknowledged = nil
    var entry = entry
    let previous = state
    head = entry.cursor
    if let username = entry.after.username {
      accounts[entry.account] = ChaosAccount(
        username: username, isLoggedIn: entry.after.isLoggedIn, updatedAt: entry.time, cursor: entry.cursor)
    } else {
      accounts[entry.account] = nil
    }
    nextID = max(nextID, entry.account + 1)
    if entry.isActive {
      activeID = entry.account
    } else if entry.wasActive {
      activeID = nil
      activeSince = entry.time
      activeSinceCursor = entry.cursor
    }
    entry.active = state
    entry.activeTimeFrom = stateTimeFrom
    log[entry.cursor] = entry
    if state != previous { stateSince = entry.availableAt }
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
