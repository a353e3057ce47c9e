import Foundation
import TestSupport
import Testing

@testable import sessiontorture

/// The checker itself, on histories written by hand: those that have an order explaining
/// every response pass, those that have none fail, and the report names the operations.
@Suite struct LinearizabilityCheckerTests {
  typealias L = Linearizability

  static let ann = L.Values(username: "ann", isLoggedIn: true)
  static let annOut = L.Values(username: "ann", isLoggedIn: false)
  static let bob = L.Values(username: "bob", isLoggedIn: true)
  static let bobOut = L.Values(username: "bob", isLoggedIn: false)
  /// Account 1, ann, signed in and active, at cursor 1.
  static let initial = L.State(accounts: [1: ann], active: 1, head: 1)
  /// Beside her, account 2, bob, signed out and not active, at cursor 2.
  static let two = L.State(accounts: [1: ann, 2: bobOut], active: 1, head: 2)

  /// An operation of client `client` from `start` to `end` ms (nil: never returned).
  static func op(_ client: Int, _ call: L.Call, _ start: UInt64, _ end: UInt64?, _ response: L.Response)
    -> L.Operation
  {
    L.Operation(
      client: client, call: call, start: start * 1_000_000, end: end.map { $0 * 1_000_000 },
      response: response)
  }

  /// The change of `account` at `cursor`; active before and after unless said otherwise.
  static func change(
    _ cursor: Int64, _ account: Int64, _ before: L.Values, _ after: L.Values, wasActive: Bool = true,
    isActive: Bool = true
  ) -> L.Response {
    .change(
      L.Change(
        cursor: cursor, account: account, before: before, after: after, wasActive: wasActive,
        isActive: isActive))
  }

  @Test func sequentialResponsesOfTheModelPass() throws {
    try L.check(
      [
        Self.op(0, .logout, 0, 1, Self.change(2, 1, Self.ann, Self.annOut)),
        Self.op(0, .logout, 2, 3, .noChange(cursor: 2, state: Self.annOut)),
        Self.op(0, .login("bob"), 4, 5, Self.change(3, 2, .none, Self.bob, wasActive: false)),
        Self.op(0, .status, 6, 7, .observed(cursor: 3, state: Self.bob)),
        Self.op(0, .login("ann"), 8, 9, Self.change(4, 1, Self.annOut, Self.ann, wasActive: false)),
        Self.op(0, .rename("bob"), 10, 11, .refused),
        Self.op(0, .status, 12, 13, .observed(cursor: 4, state: Self.ann)),
      ], from: Self.initial)
  }

  /// A login of an account in the roster signs it in and makes it active; the account that
  /// was active keeps its state and gets no entry.
  @Test func aLoginOfAnotherAccountSwitchesToIt() throws {
    let login = Self.op(0, .login("bob"), 0, 1, Self.change(3, 2, Self.bobOut, Self.bob, wasActive: false))
    try L.check([login, Self.op(0, .status, 2, 3, .observed(cursor: 3, state: Self.bob))], from: Self.two)
    // Not a new account: the one of that name.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .login("bob"), 0, 1, Self.change(3, 3, .none, Self.bob, wasActive: false))],
        from: Self.two)
    }
    // Nor a change of the account that was active.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .login("bob"), 0, 1, Self.change(3, 1, Self.ann, Self.bob))], from: Self.two)
    }
  }

  /// A rename to a name another account holds is refused and writes nothing; a refusal
  /// where the model renames fails, and so does a rename the model refuses.
  @Test func aRenameToATakenNameIsRefused() throws {
    try L.check(
      [
        Self.op(0, .rename("bob"), 0, 1, .refused),
        Self.op(0, .status, 2, 3, .observed(cursor: 2, state: Self.ann)),
      ], from: Self.two)
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .rename("carol"), 0, 1, .refused)], from: Self.two)
    }
    #expect(throws: L.Violation.self) {
      let bobIn = L.Values(username: "bob", isLoggedIn: true)
      try L.check([Self.op(0, .rename("bob"), 0, 1, Self.change(3, 1, Self.ann, bobIn))], from: Self.two)
    }
  }

  /// With no account active, a rename adds the name, signed out and active; a logout
  /// changes nothing.
  @Test func withNoActiveAccountARenameAddsOne() throws {
    let empty = L.State(accounts: [:], active: nil, head: 0)
    try L.check(
      [
        Self.op(0, .logout, 0, 1, .noChange(cursor: 0, state: .none)),
        Self.op(0, .rename("ann"), 2, 3, Self.change(1, 1, .none, Self.annOut, wasActive: false)),
        Self.op(0, .status, 4, 5, .observed(cursor: 1, state: Self.annOut)),
      ], from: empty)
  }

  /// Overlapping calls may take effect in either order: here the one called second first.
  @Test func overlappingCallsMayBeOrderedEitherWay() throws {
    try L.check(
      [
        Self.op(0, .login("bob"), 0, 10, Self.change(3, 2, .none, Self.bob, wasActive: false)),
        Self.op(1, .logout, 1, 9, Self.change(2, 1, Self.ann, Self.annOut)),
        Self.op(2, .status, 2, 3, .observed(cursor: 1, state: Self.ann)),
        Self.op(2, .status, 11, 12, .observed(cursor: 3, state: Self.bob)),
      ], from: Self.initial)
  }

  /// A write that changed nothing shows the state it saw; a status called after another
  /// write returned cannot show the state before it.
  @Test func aReadOfTheStateBeforeAReturnedWriteFails() {
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .logout, 0, 1, Self.change(2, 1, Self.ann, Self.annOut)),
          Self.op(1, .status, 2, 3, .observed(cursor: 1, state: Self.ann)),
        ], from: Self.initial)
    }
  }

  /// A write's answer that shows its account as it was before a write that returned
  /// earlier (a stale read inside the write) fails, even with the right state after it.
  @Test func aChangeFromAStaleStateFails() {
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .logout, 0, 1, Self.change(2, 1, Self.ann, Self.annOut)),
          Self.op(
            1, .rename("carol"), 2, 3,
            Self.change(3, 1, Self.ann, L.Values(username: "carol", isLoggedIn: false))),
        ], from: Self.initial)
    }
  }

  /// The defect the scenario exists for: "no change" beside a state in which the write
  /// would have changed something (the state read after a concurrent logout).
  @Test func aNoChangeAnswerShowingAStateTheWriteWouldChangeFails() throws {
    let history = [
      Self.op(0, .login("ann"), 0, 10, .noChange(cursor: 2, state: Self.annOut)),
      Self.op(1, .logout, 1, 5, Self.change(2, 1, Self.ann, Self.annOut)),
    ]
    let violation = try #require(throws: L.Violation.self) { try L.check(history, from: Self.initial) }
    #expect(!violation.gaveUp)
    #expect(violation.description.contains("login ann → noChange"))
    // The same answer with the state the write saw is explained.
    try L.check(
      [history[1], Self.op(0, .login("ann"), 0, 10, .noChange(cursor: 1, state: Self.ann))],
      from: Self.initial)
  }

  @Test func aWrongCursorFails() {
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .logout, 0, 1, Self.change(3, 1, Self.ann, Self.annOut))],
        from: Self.initial)
    }
  }

  /// A killed client's write may take effect later than any other operation, or never.
  @Test func aKilledWriteMayTakeEffectLateOrNever() throws {
    let killed = Self.op(0, .logout, 0, nil, .unknown)
    try L.check(
      [
        killed,
        Self.op(1, .status, 1, 2, .observed(cursor: 1, state: Self.ann)),
        Self.op(1, .status, 3, 4, .observed(cursor: 2, state: Self.annOut)),
      ], from: Self.initial)
    try L.check(
      [killed, Self.op(1, .status, 5, 6, .observed(cursor: 1, state: Self.ann))], from: Self.initial)
    // But not before it was called.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(1, .status, 0, 1, .observed(cursor: 2, state: Self.annOut)),
          Self.op(0, .logout, 2, nil, .unknown),
        ], from: Self.initial)
    }
  }

  /// Many overlapping clients: the memo keeps the search small.
  @Test func aLongConcurrentHistoryIsCheckedQuickly() throws {
    var operations: [L.Operation] = []
    var state = Self.initial
    var random = SplitMix64(seed: 7)
    var clock: UInt64 = 0
    for index in 0..<400 {
      let call: L.Call =
        switch random.below(4) {
        case 0: .login(["ann", "bob"][random.below(2)])
        case 1: .logout
        case 2: .rename(["ann", "bob"][random.below(2)])
        default: .status
        }
      let (response, next) = L.step(call, state)
      state = next
      // Each operation spans four of its neighbours; the sequence is its real order.
      operations.append(
        L.Operation(client: index % 5, call: call, start: clock, end: clock + 5, response: response))
      clock += 1
    }
    try L.check(operations.shuffled(using: &random), from: Self.initial)
  }
}

/// The watchers' checks, on `watch` output written by hand: etcd's guarantees across restarts.
@Suite struct LinearizeWatcherCheckTests {
  typealias Instance = LinearizeWatcher.Instance

  static func state(_ name: String, _ time: Int) -> String {
    #"{"username":"\#(name)","isLoggedIn":true,"updatedAt":"T\#(time)"}"#
  }

  static func change(_ cursor: Int64, origin: String = "sessionctl") -> String {
    #"{"type":"change","cursor":\#(cursor),"at":"T\#(cursor)","origin":"\#(origin)","account":1,"events":[],"before":\#(state("u\(cursor - 1)", Int(cursor) - 1)),"after":\#(state("u\(cursor)", Int(cursor))),"wasActive":true,"isActive":true}"#
  }

  /// A change of account 2 at `cursor` to `after` (a JSON state object), with its flags.
  static func other(_ cursor: Int64, after: String, wasActive: Bool, isActive: Bool) -> String {
    #"{"type":"change","cursor":\#(cursor),"at":"T\#(cursor)","origin":"sessionctl","account":2,"events":[],"before":\#(state("v", 0)),"after":\#(after),"wasActive":\#(wasActive),"isActive":\#(isActive)}"#
  }

  static let log = Dictionary(uniqueKeysWithValues: (1...4).map { ($0, change($0)) } as [(Int64, String)])
  static let snapshot = #"{"type":"snapshot","cursor":1,"state":\#(state("u1", 1))}"#

  /// A `watch` process killed by the scenario after printing `lines`.
  static func killed(_ lines: [String], since: (cursor: Int64, time: String)? = nil) -> Instance {
    Instance(since: since, lines: lines, status: 137, killed: true)
  }

  func check(_ instances: [Instance]) -> [String] {
    LinearizeWatcher.check(instances, name: "w", startAfter: 1, against: Self.log, head: 4).problems
  }

  @Test func restartsResumedAfterTheLastLineReceivedPass() {
    let found = LinearizeWatcher.check(
      [
        Self.killed([]),
        Self.killed([Self.snapshot, Self.change(2), "{\"type\":\"chan"]),
        Self.killed([], since: (2, "T2")),
        Self.killed([Self.change(3), Self.change(4)], since: (2, "T2")),
      ], name: "w", startAfter: 1, against: Self.log, head: 4)
    #expect(found.problems.isEmpty, "\(found.problems)")
    #expect(found.delivered == 3)
  }

  /// A snapshot shows the active account's state: after a change of another account (a
  /// logout of it by name, a removal), the state of the last change that left an account
  /// active; after the removal of the active account, none, at that removal's time. A
  /// watch resumed after a snapshot alone gives its cursor without a time (the state's time
  /// is not its cursor's change's); after a change line, its cursor and time.
  @Test func aSnapshotIsTheActiveStateTheLogLeadsTo() throws {
    let removedActive = #"{"username":null,"isLoggedIn":false,"updatedAt":"T3"}"#
    let log: [Int64: String] = [
      1: Self.change(1),
      2: Self.other(2, after: Self.state("v", 2), wasActive: false, isActive: false),
      3: Self.other(3, after: removedActive, wasActive: true, isActive: false),
    ]
    func problems(_ snapshot: String, at cursor: Int64) -> [String] {
      let lines =
        [#"{"type":"snapshot","cursor":\#(cursor),"state":\#(snapshot)}"#] + (cursor < 3 ? [log[3]!] : [])
      let head = cursor < 3 ? Int64(3) : cursor
      return LinearizeWatcher.check(
        [Self.killed(lines)], name: "w", startAfter: 1, against: log, head: head
      ).problems
    }
    #expect(problems(Self.state("u1", 1), at: 2).isEmpty)
    let another = problems(Self.state("v", 2), at: 2)
    #expect(another.contains { $0.contains("not the active state") }, "\(another)")
    #expect(problems(removedActive, at: 3).isEmpty)
    let stale = problems(Self.state("u1", 1), at: 3)
    #expect(stale.contains { $0.contains("not the active state") }, "\(stale)")

    let snapshotAlone = Self.killed([#"{"type":"snapshot","cursor":2,"state":\#(Self.state("u1", 1))}"#])
    let resume = try #require(LinearizeWatcher.resumePoint(snapshotAlone))
    #expect(resume.cursor == 2 && resume.time == nil)
    #expect(LinearizeWatcher.since(resume) == "2")
    let afterChange = try #require(
      LinearizeWatcher.resumePoint(Self.killed([Self.change(4)], since: (3, "T3"))))
    #expect(LinearizeWatcher.since(afterChange) == "4@T4")
  }

  @Test func aGapADuplicateAChangedEntryAndAShortFeedFail() {
    let gap = check([
      Self.killed([Self.snapshot, Self.change(2)]),
      Self.killed([Self.change(4)], since: (2, "T2")),
    ])
    #expect(gap.contains { $0.contains("a gap") }, "\(gap)")
    let duplicate = check([
      Self.killed([Self.snapshot, Self.change(2)]),
      Self.killed([Self.change(2), Self.change(3), Self.change(4)], since: (2, "T2")),
    ])
    #expect(duplicate.contains { $0.contains("a duplicate") }, "\(duplicate)")
    let changed = check([
      Instance(
        since: nil, lines: [Self.snapshot, Self.change(2), Self.change(3, origin: "other"), Self.change(4)],
        status: 137, killed: true)
    ])
    #expect(changed.contains { $0.contains("the log has") }, "\(changed)")
    let short = check([Self.killed([Self.snapshot, Self.change(2)])])
    #expect(short.contains { $0.contains("ended at cursor 2") }, "\(short)")
    let refused = check([
      Self.killed([Self.snapshot]),
      Instance(since: (1, "T1"), lines: ["exited with 67: the log was rewritten"], status: 67, killed: false),
    ])
    #expect(refused.contains { $0.contains("exited with 67") }, "\(refused)")
  }
}

/// The scenario against the real `sessionctl`: clients as whole processes, some killed,
/// and resumed watchers, on a SQLite file and on PostgreSQL, on seeds of its own (printed).
@Suite(.timeLimit(.minutes(10))) struct LinearizeScenarioTests {
  let dir: TemporaryDirectory

  init() throws { dir = try TemporaryDirectory() }

  /// Runs rounds of `clients` loops of `operations` from a random seed until `seconds` passed.
  func linearize(_ database: String, clients: Int, operations: Int, seconds: Int) async throws {
    let seed = UInt64.random(in: 0...UInt64(UInt32.max))
    print("linearize: seed \(seed), rounds of seeds from it for \(seconds) s")
    let result = try await ProcessRunner.run(
      ProcessRunner.product("sessiontorture"),
      [
        "linearize", "--seed", String(seed), "--clients", String(clients), "--operations", String(operations),
        "--watchers", "2", "--kill-percent", "15", "--long", String(seconds), "--sessionctl",
        ProcessRunner.product("sessionctl"),
        "--db", database,
      ], timeout: .seconds(600))
    #expect(result.status == 0, "seed \(seed): \(result.stderr)")
    let summary = try #require(result.stdout.split(separator: "\n").last)
    let values = try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
    #expect(values["problems"] as? Int == 0)
    #expect(values["operations"] as? Int ?? 0 >= operations * 5)
    #expect(values["noChange"] as? Int ?? 0 > 0)
    #expect(values["refused"] as? Int ?? 0 > 0)
    #expect(values["killed"] as? Int ?? 0 > 0)
    #expect(values["delivered"] as? Int ?? 0 > 0)
  }

  @Test func sessionctlOnSQLiteIsLinearizableAndItsWatchersLoseNothing() async throws {
    try await linearize(dir.file("session.db"), clients: 12, operations: 15, seconds: 20)
  }

  @Test func sessionctlOnPostgreSQLIsLinearizableAndItsWatchersLoseNothing() async throws {
    let cluster = try await PostgresCluster.shared()
    try await linearize(cluster.freshStoreURL(), clients: 12, operations: 6, seconds: 10)
  }
}
