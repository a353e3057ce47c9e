import Foundation
import SessionStorage
import Testing
import ToolingKit

@testable import sessiontorture

/// The chaos model's range for the oldest cursor after a retention by age, on histories
/// written by hand: it must hold every oldest cursor the feed trigger can leave, for every
/// clock reading within the write's window, whatever the write did after reading it.
@Suite struct ChaosModelTests {
  /// A model with a 1000 ms age limit whose log holds an entry at each of `times` (ms), in
  /// cursor order, each committed by a write whose window is `windows[i]`.
  static func model(_ times: [Int64], windows: [ClosedRange<Int64>]) -> ChaosModel {
    var model = ChaosModel(initial: ChaosState(username: nil, isLoggedIn: false, updatedAt: 0), at: 0)
    model.policy = ChaosPolicy(maxAgeMilliseconds: 1000)
    for (index, (time, window)) in zip(times, windows).enumerated() {
      // One account: it joins, active, then is renamed and signs in and out.
      let entry = ChaosEntry(
        cursor: model.head + 1, origin: "test", account: 1, before: model.state,
        after: ChaosState(username: "u\(index)", isLoggedIn: index % 2 == 0, updatedAt: time),
        wasActive: index > 0, isActive: true, serial: index, availableAt: 0)
      model.commit(entry)
      model.retainByAge(window: window, at: 0)
    }
    return model
  }

  /// A write that reads its clock early and then takes longer than the age limit (a Python
  /// client whose fsyncs each take 100 ms, on a loaded machine): at 101,050 ms it deletes
  /// the entry of 100,000 ms; its window ends at 102,100 ms, where even its own entry is older
  /// than the limit. The trigger never deletes the entry it wrote, so the oldest may be that
  /// one. (With "no entry young enough" taken as "none deleted", the model says 1, and a
  /// chaos run failed: "the oldest cursor is 51, the model says 50".)
  @Test func aWriteLongerThanTheAgeLimitMayDeleteUpToItsOwnEntry() {
    var model = Self.model([100_000, 101_050], windows: [99_990...100_010, 100_990...102_100])
    #expect(model.firstAvailable == 1)
    #expect(model.firstAvailableAtMost == 2)
    #expect(model.learn(firstAvailable: 2, at: 0) == nil)
  }

  /// Never past the entry just written.
  @Test func theEntryJustWrittenIsNeverDeletedByAge() {
    var model = Self.model([100_000, 101_050], windows: [99_990...100_010, 100_990...102_100])
    #expect(model.learn(firstAvailable: 3, at: 0) != nil)
  }

  /// An entry whose time the model does not know (retention deleted it before the model read
  /// the file) may be young or old: the model may neither require it deleted nor kept.
  /// Here the entry of 100,000 ms is old for the third write, the second is of unknown time.
  @Test func anEntryOfUnknownTimeMayBeKeptOrDeleted() {
    let times: [Int64] = [100_000, ChaosState.unknown, 101_500]
    let windows: [ClosedRange<Int64>] = [99_990...100_010, 100_900...101_100, 101_490...101_510]
    var kept = Self.model(times, windows: windows)
    #expect(kept.learn(firstAvailable: 2, at: 0) == nil)
    var deleted = Self.model(times, windows: windows)
    #expect(deleted.learn(firstAvailable: 3, at: 0) == nil)
  }
}

/// The model's roster and its predictions by each writer's rules, without a file.
@Suite struct ChaosRosterModelTests {
  static func state(_ name: String?, _ isLoggedIn: Bool, _ time: Int64 = 0) -> ChaosState {
    ChaosState(username: name, isLoggedIn: isLoggedIn, updatedAt: time)
  }

  /// Commits what `action` must write by the library's rules, at `time`; returns the entry.
  @discardableResult
  static func commit(_ action: ChaosStep.Action, _ model: inout ChaosModel, at time: Int64) -> ChaosEntry? {
    guard var entry = model.predict(action, origin: "test").entry else { return nil }
    entry.setTime(time)
    model.commit(entry)
    return entry
  }

  /// alice (1, in, active at 10), bob (2, in, active from 20), bob signs out at 30.
  static func aliceAndBob() -> ChaosModel {
    var model = ChaosModel(initial: state(nil, false), at: 0)
    commit(.login("alice"), &model, at: 10)
    commit(.login("bob"), &model, at: 20)
    commit(.logout, &model, at: 30)
    return model
  }

  /// The events table and the library's derivation agree on every change a store can make.
  @Test func theEventsTableIsTheLibrarysDerivation() {
    let names: [String?] = [nil, "alice", "bob"]
    for old in names {
      for new in names {
        for (oldIn, newIn) in [(false, false), (false, true), (true, false), (true, true)] {
          for (wasActive, isActive) in [(false, false), (false, true), (true, false), (true, true)] {
            // What no store writes: a state without a username signed in or active.
            if (old == nil && (oldIn || wasActive)) || (new == nil && (newIn || isActive)) { continue }
            if old == nil && new == nil { continue }
            let entry = ChaosEntry(
              cursor: 1, origin: "test", account: 1, before: Self.state(old, oldIn),
              after: Self.state(new, newIn),
              wasActive: wasActive, isActive: isActive)
            let change = SessionChange(
              account: AccountID(1),
              before: SessionState(username: old, isLoggedIn: oldIn, updatedAt: Date()),
              after: SessionState(username: new, isLoggedIn: newIn, updatedAt: Date()), wasActive: wasActive,
              isActive: isActive)
            #expect(entry.events == change.events, "\(entry.change)")
          }
        }
      }
    }
  }

  /// A login adds a new account, active, and leaves the one that was active as it was; a
  /// login of an account in the roster switches to it.
  @Test func aLoginAddsOrSwitches() throws {
    var model = Self.aliceAndBob()
    #expect(model.accounts.count == 2)
    #expect(model.activeID == 2)
    #expect(model.state == Self.state("bob", false, 30))
    #expect(model.accounts[1]?.state == Self.state("alice", true, 10))
    let entry = try #require(Self.commit(.login("alice"), &model, at: 40))
    #expect(entry.account == 1 && !entry.wasActive && entry.isActive)
    #expect(entry.before == Self.state("alice", true, 10))
    #expect(entry.events == [.activated(username: "alice")])
    #expect(model.state(at: 3) == Self.state("bob", false, 30))
    #expect(model.state(at: 4) == Self.state("alice", true, 40))
    #expect(model.predict(.login("alice"), origin: "test").entry == nil)
  }

  /// A rename to a name another account holds is refused by the library and by the view's
  /// UNIQUE constraint; a login through the view renames the active account instead of
  /// switching.
  @Test func aTakenNameIsRefusedAndTheViewRenamesTheActiveAccount() throws {
    let model = Self.aliceAndBob()
    #expect(ChaosModel.isRefusal("usernameTaken: …", model.predict(.rename("alice"), origin: "test")))
    guard case .refused("UNIQUE") = model.predict(.rename("alice"), origin: "external", rules: .view) else {
      Issue.record("the view's rename to a taken name is not refused")
      return
    }
    guard case .refused("UNIQUE") = model.predict(.login("alice"), origin: "external", rules: .view) else {
      Issue.record("the view's login as another account's name is not refused")
      return
    }
    let login = try #require(model.predict(.login("carol"), origin: "external", rules: .view).entry)
    #expect(login.account == 2 && login.wasActive && login.isActive)
    #expect(login.after.username == "carol" && login.after.isLoggedIn)
  }

  /// Without an active account, the library's rename and the view's username add one,
  /// active; the view's logout changes nothing; the state's time is the removal's.
  @Test func withNoActiveAccount() throws {
    var model = Self.aliceAndBob()
    let removal = try #require(Self.commit(.remove("bob"), &model, at: 50))
    #expect(removal.wasActive && !removal.isActive && removal.after.username == nil)
    #expect(removal.events == [.removed(username: "bob")])
    #expect(model.activeID == nil)
    #expect(model.state == Self.state(nil, false, 50))
    #expect(model.predict(.logout, origin: "external", rules: .view).entry == nil)
    let added = try #require(model.predict(.rename("carol"), origin: "test").entry)
    #expect(added.account == 3 && added.isActive && !added.after.isLoggedIn)
    let viewAdded = try #require(model.predict(.login("dave"), origin: "external", rules: .view).entry)
    #expect(viewAdded.account == 3 && viewAdded.isActive && viewAdded.after.isLoggedIn)
    guard case .refused = model.predict(.rename("alice"), origin: "test") else {
      Issue.record("a rename to a taken name with no active account is not refused")
      return
    }
  }

  /// An outside client's edit of the roster's tables changes what the library's write of the
  /// same name would, and nothing where the library refuses a name no account has; a rename
  /// to a taken name is refused by the UNIQUE constraint.
  @Test func anEditOfTheTablesNamesAnAccount() throws {
    let model = Self.aliceAndBob()
    for action: ChaosStep.Action in [
      .logoutOf("carol"), .switchTo("carol"), .remove("carol"), .renameOf("carol", to: "dave"),
    ] {
      #expect(ChaosModel.isRefusal("accountNotFound: …", model.predict(action, origin: "test")), "\(action)")
      guard case .none = model.predict(action, origin: "external", rules: .tables) else {
        Issue.record("\(action) of no account changes something by the tables' rules")
        continue
      }
    }
    for action: ChaosStep.Action in [
      .logoutOf("alice"), .switchTo("alice"), .remove("alice"), .remove("bob"),
      .renameOf("alice", to: "carol"),
    ] {
      let library = try #require(model.predict(action, origin: "external").entry, "\(action)")
      let tables = try #require(model.predict(action, origin: "external", rules: .tables).entry, "\(action)")
      #expect(library.change == tables.change, "\(action)")
    }
    let switched = try #require(model.predict(.switchTo("alice"), origin: "external", rules: .tables).entry)
    #expect(switched.account == 1 && !switched.wasActive && switched.isActive)
    #expect(switched.events == [.activated(username: "alice")])
    guard
      case .refused("UNIQUE") = model.predict(
        .renameOf("alice", to: "bob"), origin: "external", rules: .tables)
    else {
      Issue.record("a rename to a taken name in the tables is not refused")
      return
    }
    #expect(
      model.predict(.logoutOf("bob"), origin: "external", rules: .tables).entry == nil, "bob is signed out")
    #expect(ChaosModel.Rules.outside(.logout) == .view && ChaosModel.Rules.outside(.remove("bob")) == .tables)
  }

  /// A refusal's text is matched to its kind: "no account is named" is not a taken name.
  @Test func aRefusalIsMatchedByItsKind() {
    let taken = ChaosPrediction.refused("usernameTaken")
    let missing = ChaosPrediction.refused("accountNotFound")
    #expect(ChaosModel.isRefusal("another account is named 'bob': remove it or pick another name", taken))
    #expect(
      !ChaosModel.isRefusal("no account is named 'bob' ('sessionctl accounts' lists the roster)", taken))
    #expect(
      ChaosModel.isRefusal("no account is named 'bob' ('sessionctl accounts' lists the roster)", missing))
    #expect(!ChaosModel.isRefusal("an account is named 'bob' already: switch to it instead", missing))
  }

  /// The draws cover every write of the roster through every kind of writer that makes it:
  /// instances, sessionctl (a logout of everyone too) and outside clients (the tables' edits
  /// by the shell and Python).
  @Test func theDrawsCoverEveryRosterWriteOfEveryWriter() {
    var random = SplitMix64(seed: 20_261_206)
    let steps = (0..<20_000).map { _ in ChaosStep.draw(using: &random, sessionctl: true) }
    func kinds(_ writer: (ChaosStep) -> ChaosStep.Action?) -> Set<String> {
      Set(
        steps.compactMap(writer).map { action in
          switch action {
          case .login: "login"
          case .logout: "logout"
          case .rename: "rename"
          case .logoutOf: "logout NAME"
          case .switchTo: "switch"
          case .remove: "remove"
          case .renameOf: "rename NAME"
          case .logoutAll: "logout all"
          }
        })
    }
    let every: Set = ["login", "logout", "rename", "logout NAME", "switch", "remove", "rename NAME"]
    #expect(
      kinds { if case .sessionctl(let action) = $0 { action } else { nil } } == every.union(["logout all"]))
    #expect(kinds { if case .shell(let action) = $0 { action } else { nil } } == every)
    #expect(kinds { if case .python(let action) = $0 { action } else { nil } } == every)
  }

  /// A logout of every account writes one entry per signed-in account, by identifier.
  @Test func aLogoutOfEveryAccount() {
    var model = Self.aliceAndBob()
    Self.commit(.login("bob"), &model, at: 40)
    let entries = model.signingOutEveryone(origin: "test")
    #expect(entries.map(\.account) == [1, 2])
    #expect(entries.map(\.cursor) == [5, 6])
    #expect(entries.map(\.isActive) == [false, true])
  }

  /// A time the model learns late reaches the next entry of the account and the active
  /// states that carry it.
  @Test func aTimeLearnedLateReachesWhatCarriesIt() {
    var model = Self.aliceAndBob()
    Self.commit(.login("carol"), &model, at: ChaosState.unknown)
    Self.commit(.logout, &model, at: 60)
    #expect(model.state(at: 4)?.updatedAt == ChaosState.unknown)
    #expect(model.log[5]?.before.updatedAt == ChaosState.unknown)
    model.learn(time: 55, at: 4)
    #expect(model.log[4]?.before.updatedAt == 55)
    #expect(model.state(at: 4)?.updatedAt == 55)
    #expect(model.log[5]?.before.updatedAt == 55)
  }
}
