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
  /// Both signed in, ann active, at cursor 2.
  static let both = L.State(accounts: [1: ann, 2: bob], active: 1, head: 2)
  static let carolOut = L.Values(username: "carol", isLoggedIn: false)

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

  /// A switch makes the account switched to active and changes no login state: its one
  /// change concerns that account, and the one active before stays as it was. To the active
  /// account it changes nothing; to a name no account has it is refused.
  @Test func aSwitchChangesNoLoginState() throws {
    let toBob = Self.change(3, 2, Self.bobOut, Self.bobOut, wasActive: false)
    try L.check(
      [
        Self.op(0, .switchTo("bob"), 0, 1, toBob),
        Self.op(0, .status, 2, 3, .observed(cursor: 3, state: Self.bobOut)),
        Self.op(0, .switchTo("bob"), 4, 5, .noChange(cursor: 3, state: Self.bobOut)),
        Self.op(0, .switchTo("carol"), 6, 7, .refused),
        // Ann is as she was: signed in, and switching back is her one change.
        Self.op(0, .switchTo("ann"), 8, 9, Self.change(4, 1, Self.ann, Self.ann, wasActive: false)),
      ], from: Self.two)
    // A switch that reports a change of login state.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .switchTo("bob"), 0, 1, Self.change(3, 2, Self.bobOut, Self.bob, wasActive: false))],
        from: Self.two)
    }
    // A switch whose change is of the account switched from.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .switchTo("bob"), 0, 1, Self.change(3, 1, Self.ann, Self.ann, isActive: false))],
        from: Self.two)
    }
    // A switch that signs out the account active before: a read shows it.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .switchTo("bob"), 0, 1, toBob),
          Self.op(0, .switchTo("ann"), 2, 3, Self.change(4, 1, Self.annOut, Self.annOut, wasActive: false)),
        ], from: Self.two)
    }
    // A switch to the active account that reports a change, or to no account that is not refused.
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .switchTo("ann"), 0, 1, Self.change(3, 1, Self.ann, Self.ann))], from: Self.two)
    }
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .switchTo("carol"), 0, 1, .noChange(cursor: 2, state: Self.ann))], from: Self.two)
    }
  }

  /// A removal takes the account out of the roster in one change, signed in or not; when it
  /// was the active one, none is active after it: none is promoted. A name no account has
  /// (any more) is refused, and a login of it adds a new account, with a new identifier.
  @Test func aRemovalLeavesNoAccountActive() throws {
    try L.check(
      [
        Self.op(0, .remove("ann"), 0, 1, Self.change(3, 1, Self.ann, .none, isActive: false)),
        Self.op(0, .status, 2, 3, .observed(cursor: 3, state: .none)),
        Self.op(0, .logout, 4, 5, .noChange(cursor: 3, state: .none)),
        Self.op(0, .remove("ann"), 6, 7, .refused),
        Self.op(
          0, .remove("bob"), 8, 9, Self.change(4, 2, Self.bobOut, .none, wasActive: false, isActive: false)),
        Self.op(0, .login("ann"), 10, 11, Self.change(5, 3, .none, Self.ann, wasActive: false)),
      ], from: Self.two)
    // The active account removed, then a read that shows it still active.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .remove("ann"), 0, 1, Self.change(3, 1, Self.ann, .none, isActive: false)),
          Self.op(1, .status, 2, 3, .observed(cursor: 3, state: Self.ann)),
        ], from: Self.two)
    }
    // Or one that shows another account promoted in its place.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .remove("ann"), 0, 1, Self.change(3, 1, Self.ann, .none, isActive: false)),
          Self.op(1, .status, 2, 3, .observed(cursor: 3, state: Self.bobOut)),
        ], from: Self.two)
    }
    // A removal answered while the account was not in the roster: removed already, or never added.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(
            0, .remove("bob"), 0, 1, Self.change(3, 2, Self.bobOut, .none, wasActive: false, isActive: false)),
          Self.op(
            1, .remove("bob"), 2, 3, Self.change(4, 2, Self.bobOut, .none, wasActive: false, isActive: false)),
        ], from: Self.two)
    }
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(
            0, .remove("carol"), 0, 1,
            Self.change(3, 3, Self.carolOut, .none, wasActive: false, isActive: false))
        ],
        from: Self.two)
    }
    // But while a login of it overlaps, a removal may find it.
    try L.check(
      [
        Self.op(
          0, .remove("carol"), 0, 10,
          Self.change(4, 3, L.Values(username: "carol", isLoggedIn: true), .none, isActive: false)),
        Self.op(
          1, .login("carol"), 1, 9,
          Self.change(3, 3, .none, L.Values(username: "carol", isLoggedIn: true), wasActive: false)),
        Self.op(2, .status, 11, 12, .observed(cursor: 4, state: .none)),
      ], from: Self.two)
  }

  /// A logout of a named account signs it out, active or not, and leaves it (and which one
  /// is active) as it was; one signed out already changes nothing, and the "no change"
  /// shows the active account's state; a name no account has is refused.
  @Test func aLogoutOfANamedAccountLeavesTheActiveOneAsItIs() throws {
    try L.check(
      [
        Self.op(
          0, .logoutAccount("bob"), 0, 1,
          Self.change(3, 2, Self.bob, Self.bobOut, wasActive: false, isActive: false)),
        Self.op(0, .status, 2, 3, .observed(cursor: 3, state: Self.ann)),
        Self.op(0, .logoutAccount("bob"), 4, 5, .noChange(cursor: 3, state: Self.ann)),
        Self.op(0, .logoutAccount("carol"), 6, 7, .refused),
        Self.op(0, .logoutAccount("ann"), 8, 9, Self.change(4, 1, Self.ann, Self.annOut)),
      ], from: Self.both)
    // A logout of a named account that makes it active.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .logoutAccount("bob"), 0, 1, Self.change(3, 2, Self.bob, Self.bobOut, wasActive: false))],
        from: Self.both)
    }
    // "No change" for a signed-in account, or one showing that account instead of the active one.
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .logoutAccount("bob"), 0, 1, .noChange(cursor: 2, state: Self.ann))], from: Self.both)
    }
    #expect(throws: L.Violation.self) {
      try L.check(
        [Self.op(0, .logoutAccount("bob"), 0, 1, .noChange(cursor: 2, state: Self.bobOut))], from: Self.two)
    }
  }

  /// A logout of every account signs out each signed-in one, in the order of their
  /// identifiers, one change each at consecutive cursors, the active one staying active;
  /// with nobody signed in it changes nothing.
  @Test func aLogoutOfEveryAccountSignsOutEachInIdentifierOrder() throws {
    let annOut = L.Change(
      cursor: 3, account: 1, before: Self.ann, after: Self.annOut, wasActive: true, isActive: true)
    let bobOut = L.Change(
      cursor: 4, account: 2, before: Self.bob, after: Self.bobOut, wasActive: false, isActive: false)
    try L.check(
      [
        Self.op(0, .logoutAll, 0, 1, .changes([annOut, bobOut])),
        Self.op(0, .status, 2, 3, .observed(cursor: 4, state: Self.annOut)),
        Self.op(0, .logoutAll, 4, 5, .noChange(cursor: 4, state: Self.annOut)),
      ], from: Self.both)
    // One signed in: one change, still a list.
    try L.check([Self.op(0, .logoutAll, 0, 1, .changes([annOut.at(3)]))], from: Self.two)
    // Not in the order of the identifiers.
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .logoutAll, 0, 1, .changes([bobOut.at(3), annOut.at(4)]))], from: Self.both)
    }
    // Not at consecutive cursors.
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .logoutAll, 0, 1, .changes([annOut, bobOut.at(5)]))], from: Self.both)
    }
    // Not every signed-in account.
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .logoutAll, 0, 1, .changes([annOut]))], from: Self.both)
    }
    // Not as one change of the active account alone.
    #expect(throws: L.Violation.self) {
      try L.check([Self.op(0, .logoutAll, 0, 1, .change(annOut))], from: Self.two)
    }
    // A read between its two changes, while no other write is there to explain it.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .logoutAll, 0, 10, .changes([annOut, bobOut])),
          Self.op(1, .status, 1, 9, .observed(cursor: 3, state: Self.annOut)),
        ], from: Self.both)
    }
  }

  /// A killed logout of every account commits all its changes, in one transaction, or none:
  /// a read may see the state before it or after it, never between.
  @Test func aKilledLogoutOfEveryAccountIsAllOrNothing() throws {
    let killed = Self.op(0, .logoutAll, 0, nil, .unknown)
    try L.check(
      [
        killed,
        Self.op(1, .status, 1, 2, .observed(cursor: 2, state: Self.ann)),
        Self.op(1, .status, 3, 4, .observed(cursor: 4, state: Self.annOut)),
      ], from: Self.both)
    #expect(throws: L.Violation.self) {
      try L.check(
        [killed, Self.op(1, .status, 1, 2, .observed(cursor: 3, state: Self.annOut))], from: Self.both)
    }
    // Its changes found in the log, unclaimed: both, or (with the log's head read after) it
    // made none; one of them alone is no outcome it has.
    let annOut = L.Change(
      cursor: 3, account: 1, before: Self.ann, after: Self.annOut, wasActive: true, isActive: true)
    let bobOut = L.Change(
      cursor: 4, account: 2, before: Self.bob, after: Self.bobOut, wasActive: false, isActive: false)
    try L.check(
      [
        Self.op(0, .logoutAll, 0, nil, .unanswered(unclaimed: [3: annOut, 4: bobOut])),
        Self.op(1, .history, 5, 6, .observed(cursor: 4, state: Self.annOut)),
      ], from: Self.both)
    try L.check(
      [
        Self.op(0, .logoutAll, 0, nil, .unanswered(unclaimed: [3: annOut, 4: bobOut])),
        Self.op(1, .history, 5, 6, .observed(cursor: 2, state: Self.ann)),
      ], from: Self.both)
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .logoutAll, 0, nil, .unanswered(unclaimed: [3: annOut])),
          Self.op(1, .history, 5, 6, .observed(cursor: 3, state: Self.annOut)),
        ], from: Self.both)
    }
  }

  /// A rename of a named account renames it, active or not, which stays as active as it
  /// was; its own name changes nothing; a name another account holds, or an account no
  /// one has, is refused.
  @Test func aRenameOfANamedAccountLeavesTheActiveOneAsItIs() throws {
    try L.check(
      [
        Self.op(
          0, .renameAccount("bob", to: "carol"), 0, 1,
          Self.change(3, 2, Self.bobOut, Self.carolOut, wasActive: false, isActive: false)),
        Self.op(0, .status, 2, 3, .observed(cursor: 3, state: Self.ann)),
        Self.op(0, .renameAccount("carol", to: "carol"), 4, 5, .noChange(cursor: 3, state: Self.ann)),
        Self.op(0, .renameAccount("carol", to: "ann"), 6, 7, .refused),
        Self.op(0, .renameAccount("bob", to: "dan"), 8, 9, .refused),
        Self.op(0, .login("bob"), 10, 11, Self.change(4, 3, .none, Self.bob, wasActive: false)),
      ], from: Self.two)
    // To a name another account holds.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(
            0, .renameAccount("bob", to: "ann"), 0, 1,
            Self.change(3, 2, Self.bobOut, Self.annOut, wasActive: false, isActive: false))
        ],
        from: Self.two)
    }
    // Making it active, or renaming the active account instead.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(
            0, .renameAccount("bob", to: "carol"), 0, 1,
            Self.change(3, 2, Self.bobOut, Self.carolOut, wasActive: false))
        ],
        from: Self.two)
    }
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(
            0, .renameAccount("bob", to: "carol"), 0, 1,
            Self.change(3, 1, Self.ann, L.Values(username: "carol", isLoggedIn: true)))
        ],
        from: Self.two)
    }
  }

  /// A write without an answer whose changes are in the log, claimed by no answer: it made
  /// them exactly as the log holds them (the model's own change at that point), or nothing.
  @Test func anUnansweredWriteMadeAnEntryNoAnswerClaimsOrNothing() throws {
    let toBob = L.Change(
      cursor: 3, account: 2, before: Self.bobOut, after: Self.bobOut, wasActive: false, isActive: true)
    try L.check(
      [
        Self.op(0, .switchTo("bob"), 0, nil, .unanswered(unclaimed: [3: toBob])),
        Self.op(1, .status, 1, 2, .observed(cursor: 2, state: Self.ann)),
        Self.op(1, .status, 3, 4, .observed(cursor: 3, state: Self.bobOut)),
      ], from: Self.two)
    // An entry in the log that differs from the model's change: here a switch that signs in.
    var signsIn = toBob
    signsIn.after = Self.bob
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .switchTo("bob"), 0, nil, .unanswered(unclaimed: [3: signsIn])),
          Self.op(1, .status, 3, 4, .observed(cursor: 3, state: Self.bob)),
        ], from: Self.two)
    }
    // Even where the reads after it agree with the model: the log's entry is what it made.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .switchTo("bob"), 0, nil, .unanswered(unclaimed: [3: signsIn])),
          Self.op(1, .status, 3, 4, .observed(cursor: 3, state: Self.bobOut)),
        ], from: Self.two)
    }
    // An unclaimed entry no write without an answer can have made.
    #expect(throws: L.Violation.self) {
      try L.check(
        [
          Self.op(0, .remove("carol"), 0, nil, .unanswered(unclaimed: [3: toBob])),
          Self.op(1, .status, 3, 4, .observed(cursor: 3, state: Self.bobOut)),
        ], from: Self.two)
    }
  }

  /// Many overlapping clients, every call drawn: the memo keeps the search small.
  @Test func aLongConcurrentHistoryIsCheckedQuickly() throws {
    var operations: [L.Operation] = []
    var state = Self.initial
    var random = SplitMix64(seed: 7)
    var clock: UInt64 = 0
    func name() -> String { ["ann", "bob", "cat"][random.below(3)] }
    for index in 0..<400 {
      let call: L.Call =
        switch random.below(10) {
        case 0: .login(name())
        case 1: .logout
        case 2: .rename(name())
        case 3: .logoutAccount(name())
        case 4: .logoutAll
        case 5: .renameAccount(name(), to: name())
        case 6: .switchTo(name())
        case 7: .remove(name())
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

/// Reading `sessionctl --json` answers and resolving writes without one, on lines
/// `sessionctl` printed: `login ann`, `login bob`, `logout --all`, `remove ann`.
@Suite struct LinearizeClientReadingTests {
  typealias L = Linearizability

  static let lines: [Int64: String] = [
    1:
      #"{"type":"change","cursor":1,"at":"2026-12-06T23:06:31.931Z","origin":"sessionctl","account":1,"events":[{"type":"added","username":"ann"},{"type":"loggedIn","username":"ann"},{"type":"activated","username":"ann"}],"before":{"username":null,"isLoggedIn":false,"updatedAt":"2026-12-06T23:06:31.931Z"},"after":{"username":"ann","isLoggedIn":true,"updatedAt":"2026-12-06T23:06:31.931Z"},"wasActive":false,"isActive":true}"#,
    2:
      #"{"type":"change","cursor":2,"at":"2026-12-06T23:06:31.974Z","origin":"sessionctl","account":2,"events":[{"type":"added","username":"bob"},{"type":"loggedIn","username":"bob"},{"type":"activated","username":"bob"}],"before":{"username":null,"isLoggedIn":false,"updatedAt":"2026-12-06T23:06:31.974Z"},"after":{"username":"bob","isLoggedIn":true,"updatedAt":"2026-12-06T23:06:31.974Z"},"wasActive":false,"isActive":true}"#,
    3:
      #"{"type":"change","cursor":3,"at":"2026-12-06T23:06:32.053Z","origin":"sessionctl","account":1,"events":[{"type":"loggedOut","username":"ann"}],"before":{"username":"ann","isLoggedIn":true,"updatedAt":"2026-12-06T23:06:31.931Z"},"after":{"username":"ann","isLoggedIn":false,"updatedAt":"2026-12-06T23:06:32.053Z"},"wasActive":false,"isActive":false}"#,
    4:
      #"{"type":"change","cursor":4,"at":"2026-12-06T23:06:32.053Z","origin":"sessionctl","account":2,"events":[{"type":"loggedOut","username":"bob"}],"before":{"username":"bob","isLoggedIn":true,"updatedAt":"2026-12-06T23:06:31.974Z"},"after":{"username":"bob","isLoggedIn":false,"updatedAt":"2026-12-06T23:06:32.053Z"},"wasActive":true,"isActive":true}"#,
    5:
      #"{"type":"change","cursor":5,"at":"2026-12-06T23:06:32.210Z","origin":"sessionctl","account":1,"events":[{"type":"removed","username":"ann"}],"before":{"username":"ann","isLoggedIn":false,"updatedAt":"2026-12-06T23:06:32.053Z"},"after":{"username":null,"isLoggedIn":false,"updatedAt":"2026-12-06T23:06:32.210Z"},"wasActive":false,"isActive":false}"#,
  ]
  static let noChange =
    #"{"type":"noChange","cursor":4,"state":{"username":"bob","isLoggedIn":false,"updatedAt":"2026-12-06T23:06:32.053Z"}}"#
  static let client = LinearizeClient(sessionctl: "sessionctl", database: "unused.db", scratch: "/tmp")

  static func change(_ cursor: Int64) throws -> L.Change {
    let line = try #require(lines[cursor])
    return try #require(JSONLines.object(line).flatMap(JSONLines.change))
  }

  /// A logout of every account answers one line per account, read as one response; a
  /// removal's change has no username after; a write of one change printing two lines is
  /// no answer the scenario reads.
  @Test func aLogoutOfEveryAccountIsOneResponseOfItsChanges() throws {
    let ann = try Self.change(3)
    let bob = try Self.change(4)
    #expect(ann.cursor == 3 && ann.account == 1 && ann.after == L.Values(username: "ann", isLoggedIn: false))
    let (response, changes) = try Self.client.read(.logoutAll, [Self.lines[3]!, Self.lines[4]!])
    #expect(response == .changes([ann, bob]))
    #expect(changes.count == 2)
    #expect(try Self.client.read(.logoutAll, [Self.noChange]).0 == .noChange(cursor: 4, state: bob.after))
    let removal = try Self.client.read(.remove("ann"), [Self.lines[5]!]).0
    #expect(removal == .change(try Self.change(5)))
    if case .change(let change) = removal { #expect(change.after == .none && !change.isActive) }
    #expect(throws: TortureFailure.self) {
      try Self.client.read(.switchTo("bob"), [Self.lines[3]!, Self.lines[4]!])
    }
    // A refusal: no account of that name, another account holding the new one.
    #expect(
      LinearizeClient.isRefusal(
        status: 65, "sessionctl: error: no account is named 'zed' ('sessionctl accounts' lists the roster)"))
    #expect(
      LinearizeClient.isRefusal(
        status: 65, "sessionctl: error: another account is named 'bob': remove it or pick another name"))
  }

  /// A write without an answer may have made any entry after the round's start that no
  /// answer claims; a read without one is left out, and so is every write without one when
  /// every entry is claimed. The answered ones stay as they were.
  @Test func aWriteWithoutAnAnswerMayHaveMadeTheEntriesNoAnswerClaims() throws {
    func outcome(_ call: L.Call, _ response: L.Response, killed: Bool = false) -> LinearizeClient.Outcome {
      LinearizeClient.Outcome(
        operation: .init(client: 0, call: call, start: 0, end: killed ? nil : 1, response: response),
        killed: killed, problem: nil, changes: [], since: 2)
    }
    let answered = outcome(.logoutAll, .changes([try Self.change(3), try Self.change(4)]))
    let outcomes = [
      answered, outcome(.remove("ann"), .unknown, killed: true), outcome(.status, .unknown, killed: true),
    ]
    let resolved = LinearizeRound.resolve(outcomes, Self.lines, after: 2)
    #expect(resolved.map(\.call) == [.logoutAll, .remove("ann")])
    #expect(resolved.first?.response == answered.operation.response)
    #expect(resolved.last?.response == .unanswered(unclaimed: [5: try Self.change(5)]))
    let claimed = LinearizeRound.resolve(outcomes, Self.lines.filter { $0.key <= 4 }, after: 2)
    #expect(claimed.map(\.call) == [.logoutAll])
  }
}

extension Linearizability.Change {
  /// The same change at `cursor`.
  func at(_ cursor: Int64) -> Self {
    var moved = self
    moved.cursor = cursor
    return moved
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
