import FeedKit
import Foundation
import SessionStoragePostgres
import TestSupport
import Testing

@testable import SessionStorage

/// The roster's contract, held by every backend alike: what each write does to the accounts
/// and the active one, the entry it commits, its refusals, conditional writes, and the feed
/// followed per account.
@Suite(.timeLimit(.minutes(10))) struct AccountsContractTests {
  typealias Kind = RepositoryContractTests.Kind

  /// The roster as names: `*alice+` is active and signed in, `bob` neither.
  func names(_ roster: SessionRoster) -> [String] {
    roster.accounts.map { ($0.id == roster.activeID ? "*" : "") + $0.username + ($0.isLoggedIn ? "+" : "") }
  }

  @Test(arguments: Kind.allCases)
  func aSecondLoginAddsAnAccountAndLeavesTheFirstSignedIn(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    #expect(try store.roster().accounts.isEmpty)
    let alice = try #require(try await store.logIn(as: "alice"))
    #expect(alice.change.account == AccountID(1))
    #expect(
      alice.events == [
        .added(username: "alice"), .loggedIn(username: "alice"), .activated(username: "alice"),
      ])
    let bob = try #require(try await store.logIn(as: "bob"))
    #expect(bob.change.account == AccountID(2))
    #expect(!bob.change.wasActive && bob.change.isActive)
    #expect(try names(store.roster()) == ["alice+", "*bob+"])
    #expect(try store.state.username == "bob")
    // Signing in as alice again switches back; nothing is added.
    let again = try #require(try await store.logIn(as: "alice"))
    #expect(again.change.account == AccountID(1))
    #expect(again.events == [.activated(username: "alice")])
    #expect(try await store.logIn(as: "alice") == nil)
    let roster = try store.roster()
    #expect(names(roster) == ["*alice+", "bob+"])
    #expect(roster.cursor == Cursor(3))
    #expect(roster.account(named: "alice")?.cursor == Cursor(3))
    #expect(roster.account(named: "bob")?.cursor == Cursor(2))
  }

  @Test(arguments: Kind.allCases)
  func switchChangesNoLoginStateAndRemoveNeverPromotes(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    try await store.logIn(as: "alice")
    try await store.logIn(as: "bob")
    try await store.logOut()
    #expect(try names(store.roster()) == ["alice+", "*bob"])
    let switched = try #require(try await store.switchTo("alice"))
    #expect(switched.events == [.activated(username: "alice")])
    #expect(switched.before.isLoggedIn && switched.after.isLoggedIn)
    #expect(try await store.switchTo("alice") == nil)
    #expect(try names(store.roster()) == ["*alice+", "bob"])
    let removed = try #require(try await store.remove("alice"))
    #expect(removed.events == [.loggedOut(username: "alice"), .removed(username: "alice")])
    #expect(removed.change.wasActive && !removed.change.isActive)
    let roster = try store.roster()
    #expect(names(roster) == ["bob"], "nothing is promoted")
    #expect(roster.activeID == nil)
    #expect(try store.state.username == nil)
    #expect(try store.state.isLoggedIn == false)
    #expect(try store.state.updatedAt == removed.time)
    #expect(try await store.logOut() == nil, "no active account: nothing to sign out")
    // A new account never takes a removed one's identifier.
    let carol = try #require(try await store.logIn(as: "carol"))
    #expect(carol.change.account == AccountID(3))
  }

  @Test(arguments: Kind.allCases)
  func namedAndAllLogoutsAndRenames(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    try await store.logIn(as: "alice")
    try await store.logIn(as: "bob")
    try await store.logIn(as: "carol")
    let bob = try #require(try await store.logOut("bob"))
    #expect(bob.events == [.loggedOut(username: "bob")])
    #expect(!bob.change.isActive)
    #expect(try await store.logOut("bob") == nil)
    let all = try await store.logOutAll()
    #expect(all.map(\.change.account) == [AccountID(1), AccountID(3)])
    #expect(all.map(\.cursor.value) == [5, 6])
    #expect(try await store.logOutAll().isEmpty)
    #expect(try names(store.roster()) == ["alice", "bob", "*carol"])
    let renamed = try #require(try await store.rename("bob", to: "robert"))
    #expect(renamed.events == [.usernameChanged(from: "bob", to: "robert")])
    let active = try #require(try await store.rename(to: "caroline"))
    #expect(active.change.account == AccountID(3))
    #expect(try names(store.roster()) == ["alice", "robert", "*caroline"])
  }

  @Test(arguments: Kind.allCases)
  func refusedWritesChangeNothingAndSayWhy(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    try await store.logIn(as: "alice")
    try await store.logIn(as: "bob")
    let before = try store.roster()
    func code(_ write: () async throws -> Any?) async -> SessionStorageError.Code? {
      do {
        _ = try await write()
        return nil
      } catch let error as SessionStorageError {
        return error.code
      } catch {
        return nil
      }
    }
    #expect(await code { try await store.switchTo("nobody") } == .accountNotFound)
    #expect(await code { try await store.remove("nobody") } == .accountNotFound)
    #expect(await code { try await store.logOut("nobody") } == .accountNotFound)
    #expect(await code { try await store.rename("nobody", to: "x") } == .accountNotFound)
    #expect(await code { try await store.rename(to: "alice") } == .usernameTaken)
    #expect(await code { try await store.rename("alice", to: "bob") } == .usernameTaken)
    #expect(await code { try await store.switchTo(" ") } == .invalidUsername)
    #expect(await code { try await store.logOutAll(expecting: .account(.zero)) } == .invalidArgument)
    #expect(try store.roster() == before)
  }

  @Test(arguments: Kind.allCases)
  func conditionalWritesAreRefusedWhenAnotherWriterCameFirst(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    let first = try #require(try await store.logIn(as: "alice", expecting: .head(.zero)))
    // A stale writer read the store at cursor 0 and signs in carol: refused.
    await #expect(throws: SessionStorageError.self) {
      try await store.logIn(as: "carol", expecting: .head(.zero))
    }
    do {
      try await store.logOut(expecting: .head(.zero))
      Issue.record("a write expecting an old head committed")
    } catch let error as SessionStorageError {
      #expect(error.code == .conflict)
      #expect(error.message.contains("at cursor 1, not at 0"), "\(error.message)")
    }
    try await store.logIn(as: "bob")
    // The account's own cursor: bob's change does not move alice's.
    #expect(try await store.logOut("alice", expecting: .account(first.cursor)) != nil)
    await #expect(throws: SessionStorageError.self) {
      try await store.logIn(as: "alice", expecting: .account(first.cursor))
    }
    // `.account(.zero)` expects no such account: a login that may only add.
    #expect(try await store.logIn(as: "carol", expecting: .account(.zero)) != nil)
    await #expect(throws: SessionStorageError.self) {
      try await store.logIn(as: "carol", expecting: .account(.zero))
    }
    #expect(try store.roster().accounts.map(\.username) == ["alice", "bob", "carol"])
    #expect(try store.bounds().head == Cursor(4))
  }

  @Test(arguments: Kind.allCases)
  func aSubscriberFollowsOneAccountWithTheStoresCursors(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    try await store.logIn(as: "alice")
    let bobsChanges = try store.changes(from: .beginning, account: AccountID(2))
    try await store.logIn(as: "bob")
    try await store.logIn(as: "alice")
    try await store.logOut("bob")
    try await store.rename("alice", to: "alicia")
    try await store.remove("bob")
    let entries = try await first(3, of: bobsChanges)
    #expect(entries.map(\.cursor.value) == [2, 4, 6])
    #expect(entries.allSatisfy { $0.change.account == AccountID(2) })
    #expect(
      try store.history(from: .beginning, limit: 10, account: AccountID(1)).map(\.cursor.value) == [1, 3, 5])
    #expect(
      try store.history(from: .after(Cursor(3)), limit: 1, account: AccountID(1)).map(\.cursor.value) == [5])
  }

  @Test(arguments: Kind.allCases)
  func valuesFollowTheActiveAccountAndTheRosterFolds(_ kind: Kind) async throws {
    let subject = try await kind.make()
    defer { withExtendedLifetime(subject) {} }
    let store = subject.repository
    try await store.logIn(as: "alice")
    var values = store.values().makeAsyncIterator()
    #expect(try await values.next()?.username == "alice")
    let start = try store.roster()
    try await store.logIn(as: "bob")
    #expect(try await values.next()?.username == "bob")
    try await store.logOut("alice")  // another account: the active state stays
    try await store.switchTo("alice")
    let shown = try #require(try await values.next())
    #expect(shown.username == "alice")
    #expect(shown.isLoggedIn == false)
    try await store.remove("alice")
    #expect(try await values.next()?.username == nil)
    // Folding the entries after a roster read gives the roster read now.
    let folded = try store.history(from: .after(start.cursor), limit: 100).reduce(start) { $0.applying($1) }
    #expect(folded == (try store.roster()))
  }
}
