import FeedKit
import Foundation
import TestSupport
import Testing
import ToolingKit

@testable import SessionStorage

// The differential test's generators and runner: plans of random operations drawn from a
// seed (`SplitMix64`), applied to a store, and what each operation returned or threw, in a
// shape two stores can be compared by.

extension DifferentialTests {
  // MARK: - Plans

  /// The origins to open the stores with (the last one valid) and the operations to apply.
  struct Plan: Sendable {
    var origins: [String]
    var operations: [Operation]

    init(seed: UInt64, count: Int) {
      var random = SplitMix64(seed: seed)
      origins = (0..<random.below(3)).map { _ in random.pick(Choices.origins) }
      origins.append(random.pick(Choices.validOrigins))
      operations = (0..<count).map { _ in Operation(&random) }
    }
  }

  /// A cursor, chosen relative to the reference store's bounds when it is applied.
  enum CursorChoice: Sendable, CustomStringConvertible {
    case fixed(Int64)
    case head(plus: Int64)
    case firstAvailable(plus: Int64)

    init(_ random: inout SplitMix64) {
      switch random.below(10) {
      case 0..<3: self = .fixed(random.pick([Int64.min, -1, 0, 1, Int64.max - 1, Int64.max]))
      case 3..<7: self = .head(plus: Int64(random.below(6)) - 3)
      default: self = .firstAvailable(plus: Int64(random.below(4)) - 2)
      }
    }

    func resolved(_ bounds: FeedBounds) -> Cursor {
      func plus(_ base: Cursor, _ offset: Int64) -> Cursor {
        let (sum, overflow) = base.value.addingReportingOverflow(offset)
        return Cursor(overflow ? (offset < 0 ? .min : .max) : sum)
      }
      switch self {
      case .fixed(let value): return Cursor(value)
      case .head(let offset): return plus(bounds.head, offset)
      case .firstAvailable(let offset): return plus(bounds.firstAvailable, offset)
      }
    }

    var description: String {
      switch self {
      case .fixed(let value): "\(value)"
      case .head(let offset): "head\(offset < 0 ? "" : "+")\(offset)"
      case .firstAvailable(let offset): "firstAvailable\(offset < 0 ? "" : "+")\(offset)"
      }
    }
  }

  /// The time given with `.afterEntry`: each store's own time of the entry at the cursor
  /// (the times differ between stores), or a wrong one.
  enum TimeChoice: Sendable, CustomStringConvertible {
    case committed, epoch, secondLater

    var description: String {
      switch self {
      case .committed: "its time"
      case .epoch: "1970"
      case .secondLater: "its time + 1 s"
      }
    }
  }

  enum Start: Sendable, CustomStringConvertible {
    case now, beginning
    case after(CursorChoice)
    case afterEntry(CursorChoice, TimeChoice)

    init(_ random: inout SplitMix64) {
      switch random.below(8) {
      case 0: self = .now
      case 1: self = .beginning
      case 2..<6: self = .after(CursorChoice(&random))
      default:
        self = .afterEntry(
          CursorChoice(&random), random.pick([TimeChoice.committed, .committed, .epoch, .secondLater]))
      }
    }

    var description: String {
      switch self {
      case .now: ".now"
      case .beginning: ".beginning"
      case .after(let cursor): ".after(\(cursor))"
      case .afterEntry(let cursor, let time): ".afterEntry(\(cursor), time: \(time))"
      }
    }
  }

  /// How a write is called: its synchronous variant, its `async` one, or the `async` one from
  /// a task cancelled before the call.
  enum Call: Sendable, CustomStringConvertible {
    case sync, async, asyncInCancelledTask

    func run(
      sync: @Sendable () throws -> SessionEntry?, async: @escaping @Sendable () async throws -> SessionEntry?
    ) async throws -> SessionEntry? {
      switch self {
      case .sync: return try sync()
      case .async: return try await async()
      case .asyncInCancelledTask:
        let task = Task {
          withUnsafeCurrentTask { $0?.cancel() }
          return try await async()
        }
        return try await task.value
      }
    }

    var description: String {
      switch self {
      case .sync: ""
      case .async: " async"
      case .asyncInCancelledTask: " async, in a cancelled task"
      }
    }
  }

  /// One call of the stores' public API.
  enum Operation: Sendable, CustomStringConvertible {
    case logIn(String, Call)
    case logOut(Call)
    case rename(String, Call)
    /// The roster's writes (async), each with a condition or none.
    case switchTo(String, Condition)
    case remove(String, Condition)
    case logOutNamed(String, Condition)
    case logOutAll(Condition)
    case renameNamed(String, to: String, Condition)
    case logInExpecting(String, Condition)
    case roster
    case state
    case snapshot
    case bounds
    case history(Start, limit: Int)
    /// `history()`: the concrete stores' default arguments.
    case historyWithDefaults
    case changes(Start)
    /// `changes()`: the concrete stores' default start.
    case changesWithDefault
    case snapshotAndChanges
    case firstValue
    case compactKeepingLast(Int)
    case compactBefore(CursorChoice)
    /// Only ages whose result cannot depend on the two stores' clocks: negative, or a day.
    case compactOlderThan(Duration)

    init(_ random: inout SplitMix64) {
      // One draw decides the call: a cancelled task on 0, `async` on 2 and 4, blocking otherwise.
      let call: Call =
        switch random.below(6) {
        case 0: .asyncInCancelledTask
        case 2, 4: .async
        default: .sync
        }
      // A roster write one draw in four, else one of the 1.x calls.
      if random.below(4) == 0 {
        let condition = Condition(&random)
        switch random.below(7) {
        case 0: self = .switchTo(Choices.username(&random), condition)
        case 1: self = .remove(Choices.username(&random), condition)
        case 2: self = .logOutNamed(Choices.username(&random), condition)
        case 3: self = .logOutAll(condition)
        case 4: self = .renameNamed(Choices.username(&random), to: Choices.username(&random), condition)
        case 5: self = .logInExpecting(Choices.username(&random), condition)
        default: self = .roster
        }
        return
      }
      switch random.below(100) {
      case 0..<18: self = .logIn(Choices.username(&random), call)
      case 18..<30: self = .rename(Choices.username(&random), call)
      case 30..<40: self = .logOut(call)
      case 40..<44: self = .state
      case 44..<48: self = .snapshot
      case 48..<51: self = .bounds
      case 51..<53: self = .historyWithDefaults
      case 53..<72:
        let start = Start(&random)
        self = .history(start, limit: random.pick(Choices.limits))
      case 72..<74: self = .changesWithDefault
      case 74..<84: self = .changes(Start(&random))
      case 84..<89: self = .snapshotAndChanges
      case 89..<93: self = .firstValue
      case 93..<97: self = .compactKeepingLast(random.pick(Choices.counts))
      case 97..<99: self = .compactBefore(CursorChoice(&random))
      default: self = .compactOlderThan(random.pick([.seconds(-1), .seconds(86_400)]))
      }
    }

    var description: String {
      switch self {
      case .logIn(let name, let call): "logIn(as: \(quoted(name)))\(call)"
      case .logOut(let call): "logOut()\(call)"
      case .rename(let name, let call): "rename(to: \(quoted(name)))\(call)"
      case .switchTo(let name, let condition): "switchTo(\(quoted(name))\(condition))"
      case .remove(let name, let condition): "remove(\(quoted(name))\(condition))"
      case .logOutNamed(let name, let condition): "logOut(\(quoted(name))\(condition))"
      case .logOutAll(let condition): "logOutAll(\(condition))"
      case .renameNamed(let name, let newName, let condition):
        "rename(\(quoted(name)), to: \(quoted(newName))\(condition))"
      case .logInExpecting(let name, let condition): "logIn(as: \(quoted(name))\(condition))"
      case .roster: "roster()"
      case .state: "state"
      case .snapshot: "snapshot()"
      case .bounds: "bounds()"
      case .history(let start, let limit): "history(from: \(start), limit: \(limit))"
      case .changes(let start): "changes(from: \(start))"
      case .historyWithDefaults: "history()"
      case .changesWithDefault: "changes()"
      case .snapshotAndChanges: "snapshotAndChanges()"
      case .firstValue: "values() first value"
      case .compactKeepingLast(let count): "compact(keepingLast: \(count))"
      case .compactBefore(let cursor): "compact(before: \(cursor))"
      case .compactOlderThan(let age): "compact(olderThan: \(age))"
      }
    }
  }

  /// What a roster write expects: nothing, the head (or a cursor near it), or its account's
  /// cursor (0: no such account).
  enum Condition: Sendable, CustomStringConvertible {
    case none
    case head(CursorChoice)
    case account(CursorChoice)

    init(_ random: inout SplitMix64) {
      switch random.below(4) {
      case 0: self = .head(CursorChoice(&random))
      case 1: self = .account(CursorChoice(&random))
      default: self = .none
      }
    }

    func resolved(_ bounds: FeedBounds) -> WriteCondition? {
      switch self {
      case .none: nil
      case .head(let cursor): .head(cursor.resolved(bounds))
      case .account(let cursor): .account(cursor.resolved(bounds))
      }
    }

    var description: String {
      switch self {
      case .none: ""
      case .head(let cursor): ", expecting: .head(\(cursor))"
      case .account(let cursor): ", expecting: .account(\(cursor))"
      }
    }
  }

  /// The edge arguments operations draw from.
  enum Choices {
    static let validOrigins = ["differential", String(repeating: "o", count: 64), "MyApp 🧪", "EXTERNAL"]
    static let origins =
      validOrigins + [
        "", "external", String(repeating: "o", count: 65), "tab\there", "new\nline", "\u{0}", "Jose\u{301}",
      ]
    static let validUsernames = [
      "alice", "bob", "Alice", "Jos\u{E9}", "Jose\u{301}", "x", "'; DROP TABLE session; --",
      "Robert'); DELETE FROM session_changes WHERE ('1'='1", "🧑‍💻 dev", "名前",
      String(repeating: "n", count: 256),
    ]
    static let invalidUsernames = [
      "", " ", "   ", " alice", "alice ", "\t", "a\nb", "a\u{0}b", "\u{1B}[31mred", "admin\u{202E}txt.exe",
      "alice\u{200B}", String(repeating: "n", count: 300), String(repeating: "\u{E9}", count: 257),
      "\u{FFFD}",
      "a\u{85}b",
    ]
    /// Pieces of short random names: NFC variants of one another, quotes, and a few that
    /// make a name invalid.
    static let pieces = [
      "a", "b", "\u{E9}", "e\u{301}", "e", "\u{301}", " ", "'", "\"", "%", "\\", "\u{202E}",
    ]
    static let limits = [Int.min, -1, 0, 1, 2, 3, 10, 100, Int.max - 1, Int.max]
    static let counts = [Int.min, -1, 0, 1, 3, 10, 1000, Int.max]

    static func username(_ random: inout SplitMix64) -> String {
      switch random.below(10) {
      case 0..<6: return random.pick(validUsernames)
      case 6..<8: return random.pick(invalidUsernames)
      default: break
      }
      return (0...random.below(4)).map { _ in random.pick(pieces) }.joined()
    }
  }

  // MARK: - Outcomes

  /// A state without its time (whose value differs between stores), but with whether the
  /// time is on a millisecond as the file keeps it. The username is compared by its bytes.
  struct StateShape: Equatable, CustomStringConvertible {
    var username: String?
    var utf8: [UInt8]?
    var isLoggedIn: Bool
    var onMillisecond: Bool

    init(_ state: SessionState) {
      username = state.username
      utf8 = state.username.map { Array($0.utf8) }
      isLoggedIn = state.isLoggedIn
      onMillisecond = isOnMillisecond(state.updatedAt)
    }

    var description: String {
      "(\(username.map(quoted) ?? "nil"), \(isLoggedIn ? "in" : "out")\(onMillisecond ? "" : ", time not on a ms"))"
    }
  }

  /// An entry without its times.
  struct EntryShape: Equatable, CustomStringConvertible {
    var cursor: Cursor
    var account: AccountID
    var wasActive: Bool
    var isActive: Bool
    var origin: String
    var events: [SessionEvent]
    var before: StateShape
    var after: StateShape
    var timeOnMillisecond: Bool

    init(_ entry: SessionEntry) {
      cursor = entry.cursor
      account = entry.change.account
      wasActive = entry.change.wasActive
      isActive = entry.change.isActive
      origin = entry.origin
      events = entry.events
      before = StateShape(entry.before)
      after = StateShape(entry.after)
      timeOnMillisecond = isOnMillisecond(entry.time)
    }

    var description: String {
      "#\(cursor) account \(account)\(wasActive ? " was active" : "")\(isActive ? " is active" : "") \(quoted(origin)) [\(events.map(describe).joined(separator: ", "))] \(before) → \(after)"
        + (timeOnMillisecond ? "" : " (time not on a ms)")
    }
  }

  /// What one operation returned or threw, comparable between stores.
  enum Outcome: Equatable, CustomStringConvertible {
    case opened
    case entry(EntryShape?)
    case entries([EntryShape])
    case roster([String], active: AccountID?, Cursor)
    case state(StateShape)
    case snapshot(StateShape, Cursor)
    case bounds(FeedBounds)
    case compaction(removed: Int, bounds: FeedBounds)
    case subscription(Cursor)
    case snapshotSubscription(StateShape, Cursor)
    case value(StateShape?)
    case storageError(SessionStorageError.Code, String)
    case feedError(FeedError)
    case otherError(String)

    init(_ error: any Error) {
      switch error {
      case let error as SessionStorageError: self = .storageError(error.code, error.message)
      case let error as FeedError: self = .feedError(Self.timeless(error))
      default: self = .otherError("\(type(of: error)): \(error)")
      }
    }

    /// `error` with the times its reason quotes (the stored and the given one of a
    /// mismatched `afterEntry`) replaced by `<time>`: each store commits at its own times.
    static func timeless(_ error: FeedError) -> FeedError {
      guard case .historyRewritten(let cursor, let reason) = error else { return error }
      return .historyRewritten(
        cursor: cursor,
        reason: reason.replacing(#/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#, with: "<time>"))
    }

    var description: String {
      switch self {
      case .opened: "opened"
      case .entry(let entry): entry.map { "\($0)" } ?? "nil"
      case .entries(let entries): "\(entries.count) entries \(entries)"
      case .roster(let accounts, let active, let cursor):
        "roster at \(cursor): \(accounts.map(quoted)), active \(active.map { "\($0)" } ?? "none")"
      case .state(let state): "\(state)"
      case .snapshot(let state, let cursor): "snapshot at \(cursor): \(state)"
      case .bounds(let bounds): "bounds \(bounds.oldest.map { "\($0)" } ?? "nil")…\(bounds.head)"
      case .compaction(let removed, let bounds):
        "removed \(removed), bounds \(bounds.oldest.map { "\($0)" } ?? "nil")…\(bounds.head)"
      case .subscription(let cursor): "subscription after \(cursor)"
      case .snapshotSubscription(let state, let cursor): "snapshot subscription at \(cursor): \(state)"
      case .value(let state): "first value \(state.map { "\($0)" } ?? "none")"
      case .storageError(let code, let message): "throws \(code): \(message)"
      case .feedError(let error): "throws FeedError.\(error)"
      case .otherError(let error): "throws \(error)"
      }
    }
  }

  // MARK: - Stores

  /// A store under test: its protocol (reads, the feed, async writes), and the rest of its
  /// public API as closures.
  struct Subject: Sendable {
    let repository: any SessionRepository
    let logIn: @Sendable (String) throws -> SessionEntry?
    let logOut: @Sendable () throws -> SessionEntry?
    let rename: @Sendable (String) throws -> SessionEntry?
    let bounds: @Sendable () throws -> FeedBounds
    let compactKeepingLast: @Sendable (Int) throws -> CompactionResult
    let compactBefore: @Sendable (Cursor) throws -> CompactionResult
    let historyWithDefaults: @Sendable () throws -> [SessionEntry]
    let changesWithDefault: @Sendable () throws -> SessionSubscription

    static func sqlite(origin: String, path: String) throws -> Subject {
      // Durability does not change a result; `.normal` spares a sync per commit.
      of(try SessionStore(path: path, options: .init(durability: .normal, origin: origin)))
    }

    static func memory(origin: String) throws -> Subject { of(try SessionStore.inMemory(origin: origin)) }

    /// `store` with its blocking writes and the default arguments of its own reads.
    private static func of(_ store: SessionStore) -> Subject {
      Subject(
        repository: store, logIn: { try store.blocking.logIn(as: $0) },
        logOut: { try store.blocking.logOut() },
        rename: { try store.blocking.rename(to: $0) }, bounds: { try store.bounds() },
        compactKeepingLast: { try store.compact(keepingLast: $0) },
        compactBefore: { try store.compact(before: $0) },
        historyWithDefaults: { try store.history() }, changesWithDefault: { try store.changes() })
    }
  }

  /// A subscription made at a step, read at the end.
  struct Subscription {
    let step: Int
    let changes: SessionSubscription

    /// The entries up to `head`, or the error reading them threw.
    func delivered(upTo head: Cursor) async -> Outcome {
      let count = max(
        0, min(10_000, head.value.subtractingReportingOverflow(changes.cursor.value).partialValue))
      guard count > 0 else { return .entries([]) }
      do {
        return .entries(try await first(Int(count), of: changes, within: .seconds(60)).map(EntryShape.init))
      } catch {
        return Outcome(error)
      }
    }
  }

  /// Applies operations to one store and keeps what later operations need: the times of
  /// the entries it returned (for `.afterEntry`) and its subscriptions.
  final class Runner {
    let subject: Subject
    var times: [Cursor: Date] = [:]
    var subscriptions: [Subscription] = []

    init(_ subject: Subject) { self.subject = subject }

    func perform(_ operation: Operation, step: Int, bounds: FeedBounds) async -> Outcome {
      do {
        return try await outcome(of: operation, step: step, bounds: bounds)
      } catch {
        return Outcome(error)
      }
    }

    private func outcome(of operation: Operation, step: Int, bounds: FeedBounds) async throws -> Outcome {
      let subject = subject
      let store = subject.repository
      switch operation {
      case .logIn(let name, let call):
        return written(
          try await call.run(sync: { try subject.logIn(name) }, async: { try await store.logIn(as: name) }))
      case .logOut(let call):
        return written(
          try await call.run(sync: { try subject.logOut() }, async: { try await store.logOut() }))
      case .rename(let name, let call):
        return written(
          try await call.run(sync: { try subject.rename(name) }, async: { try await store.rename(to: name) }))
      case .switchTo(let name, let condition):
        return written(try await store.switchTo(name, expecting: condition.resolved(bounds)))
      case .remove(let name, let condition):
        return written(try await store.remove(name, expecting: condition.resolved(bounds)))
      case .logOutNamed(let name, let condition):
        return written(try await store.logOut(name, expecting: condition.resolved(bounds)))
      case .logOutAll(let condition):
        let entries = try await store.logOutAll(expecting: condition.resolved(bounds))
        for entry in entries { times[entry.cursor] = entry.time }
        return .entries(entries.map(EntryShape.init))
      case .renameNamed(let name, let newName, let condition):
        return written(try await store.rename(name, to: newName, expecting: condition.resolved(bounds)))
      case .logInExpecting(let name, let condition):
        return written(try await store.logIn(as: name, expecting: condition.resolved(bounds)))
      case .roster:
        // Identifiers and names by bytes, login states, the active one and the cursor (times
        // differ between stores; each account's own cursor is in its entries).
        let roster = try store.roster()
        return .roster(
          roster.accounts.map { "\($0.id) \(Array($0.username.utf8)) \($0.isLoggedIn) \($0.cursor)" },
          active: roster.activeID, roster.cursor)
      case .state:
        return .state(StateShape(try store.state))
      case .snapshot:
        let snapshot = try store.snapshot()
        return .snapshot(StateShape(snapshot.state), snapshot.cursor)
      case .bounds:
        return .bounds(try subject.bounds())
      case .history(let start, let limit):
        let entries = try store.history(from: resolved(start, bounds), limit: limit)
        for entry in entries { times[entry.cursor] = entry.time }
        return .entries(entries.map(EntryShape.init))
      case .historyWithDefaults:
        let entries = try subject.historyWithDefaults()
        for entry in entries { times[entry.cursor] = entry.time }
        return .entries(entries.map(EntryShape.init))
      case .changesWithDefault:
        let changes = try subject.changesWithDefault()
        subscriptions.append(Subscription(step: step, changes: changes))
        return .subscription(changes.cursor)
      case .changes(let start):
        let changes = try store.changes(from: resolved(start, bounds))
        subscriptions.append(Subscription(step: step, changes: changes))
        return .subscription(changes.cursor)
      case .snapshotAndChanges:
        let start = try store.snapshotAndChanges()
        subscriptions.append(Subscription(step: step, changes: start.changes))
        return .snapshotSubscription(StateShape(start.state), start.cursor)
      case .firstValue:
        return .value(try await first(1, of: store.values(), within: .seconds(60)).first.map(StateShape.init))
      case .compactKeepingLast(let count):
        let compaction = try subject.compactKeepingLast(count)
        return .compaction(removed: compaction.removed, bounds: compaction.bounds)
      case .compactBefore(let cursor):
        let compaction = try subject.compactBefore(cursor.resolved(bounds))
        return .compaction(removed: compaction.removed, bounds: compaction.bounds)
      case .compactOlderThan(let age):
        let compaction = try subject.repository.compact(olderThan: age)
        return .compaction(removed: compaction.removed, bounds: compaction.bounds)
      }
    }

    private func written(_ entry: SessionEntry?) -> Outcome {
      if let entry { times[entry.cursor] = entry.time }
      return .entry(entry.map(EntryShape.init))
    }

    private func resolved(_ start: Start, _ bounds: FeedBounds) -> FeedStart {
      switch start {
      case .now: return .now
      case .beginning: return .beginning
      case .after(let cursor): return .after(cursor.resolved(bounds))
      case .afterEntry(let choice, let timeChoice):
        let cursor = choice.resolved(bounds)
        let time = times[cursor] ?? Date(timeIntervalSince1970: 0)
        switch timeChoice {
        case .committed: return .afterEntry(cursor, time: time)
        case .epoch: return .afterEntry(cursor, time: Date(timeIntervalSince1970: 0))
        case .secondLater: return .afterEntry(cursor, time: time + 1)
        }
      }
    }
  }
}

/// An event with its usernames quoted.
func describe(_ event: SessionEvent) -> String {
  func name(_ username: String?) -> String { username.map(quoted) ?? "nil" }
  switch event {
  case .loggedIn(let username): return "login \(name(username))"
  case .loggedOut(let username): return "logout \(name(username))"
  case .usernameChanged(let from, let to): return "rename \(name(from)) → \(name(to))"
  case .added(let username): return "add \(name(username))"
  case .activated(let username): return "activate \(name(username))"
  case .deactivated(let username): return "deactivate \(name(username))"
  case .removed(let username): return "remove \(name(username))"
  }
}

/// Whether `date` is on a millisecond, as the file keeps times: it equals its own text parsed.
func isOnMillisecond(_ date: Date) -> Bool { Timestamp.parse(Timestamp.format(date)) == date }

/// `text` in quotes, every code point outside printable ASCII as `\u{…}` (so that "José" and
/// "Jose\u{301}" read differently), and long text shortened.
func quoted(_ text: String) -> String {
  let scalars = Array(text.unicodeScalars)
  if scalars.count > 40, Set(scalars).count == 1, let scalar = scalars.first {
    return "\(quoted(String(scalar))) × \(scalars.count)"
  }
  var output = "\""
  for scalar in scalars.prefix(60) {
    switch scalar {
    case "\"", "\\": output += "\\" + String(scalar)
    case " "..."~": output += String(scalar)
    default: output += "\\u{\(String(scalar.value, radix: 16))}"
    }
  }
  return output + (scalars.count > 60 ? "…(\(scalars.count) code points)\"" : "\"")
}

extension Result where Success == DifferentialTests.Outcome {
  /// The outcome, or the failure's.
  var outcome: DifferentialTests.Outcome {
    switch self {
    case .success(let outcome): outcome
    case .failure(let error): DifferentialTests.Outcome(error)
    }
  }
}
