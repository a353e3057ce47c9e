import Foundation
import SessionStorage
import SessionViewModels
import Synchronization
import TestSupport
import Testing

/// An account switcher, and the screens that follow the active account, on every store.
extension ViewModelTests {
  @Test(arguments: Store.allCases)
  func theSwitcherFollowsTheRosterAndItsWritesReachTheProfile(_ kind: Store) async throws {
    let (store, keep) = try await kind.make()
    defer { withExtendedLifetime(keep) {} }
    let accounts = AccountsViewModel(session: store)
    #expect(accounts.phase == .idle, "constructing reads nothing")
    let profile = ProfileViewModel(session: store)
    let signIn = SignInViewModel(session: store)
    try await whileFollowing(profile) {
      try await whileFollowing(accounts) {
        try await accounts.waitUntil { $0.phase == .following && $0.accounts.isEmpty }
        for name in ["alice", "bob"] {
          signIn.username = name
          #expect(await signIn.signIn())
        }
        try await accounts.waitUntil {
          $0.accounts.map(\.username) == ["alice", "bob"] && $0.active?.username == "bob"
        }
        try await profile.waitUntil { $0.greeting == "Hello, bob" }

        // A switch made elsewhere (another process, sessionctl) shows on both screens.
        try await store.switchTo("alice")
        try await accounts.waitUntil { $0.active?.username == "alice" }
        try await profile.waitUntil { $0.greeting == "Hello, alice" }

        // Signing out another account leaves the profile as it is.
        await accounts.logOut("bob")
        #expect(accounts.writeError == nil)
        try await accounts.waitUntil { $0.accounts.first { $0.username == "bob" }?.isLoggedIn == false }
        #expect(profile.greeting == "Hello, alice")

        await accounts.switchTo("bob")
        try await profile.waitUntil { $0.greeting == "Signed out" }
        await accounts.logOutAll()
        try await accounts.waitUntil { $0.accounts.allSatisfy { !$0.isLoggedIn } }

        // Removing the active account leaves none active: the profile says so.
        await accounts.remove("bob")
        try await accounts.waitUntil { $0.accounts.map(\.username) == ["alice"] && $0.activeID == nil }
        try await profile.waitUntil { $0.username == nil && !$0.isLoggedIn }

        // A refused write is shown and changes nothing.
        await accounts.switchTo("nobody")
        #expect(
          accounts.writeError?.contains("no account is named 'nobody'") == true,
          "\(accounts.writeError ?? "")")
        #expect(try store.roster().accounts.map(\.username) == ["alice"])
      }
    }
  }

  @Test func theSwitcherReadsTheRosterAgainAfterCompactionUnderIt() async throws {
    let store = SessionStore.inMemory()
    try await store.logIn(as: "alice")
    let accounts = AccountsViewModel(session: store, retryInterval: .milliseconds(50))
    try await whileFollowing(accounts) {
      try await accounts.waitUntil { $0.accounts.map(\.username) == ["alice"] }
      try await store.logIn(as: "bob")
      try await store.logIn(as: "carol")
      try store.compact(keepingLast: 0)
      try await store.remove("alice")
      try await accounts.waitUntil { $0.accounts.map(\.username) == ["bob", "carol"] }
      #expect(accounts.phase == .following)
    }
  }

  @Test func aSwitcherWithAnOpenerOpensOnlyWhenItFollows() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let opened = OpenCount()
    let accounts = AccountsViewModel(
      opener: SessionOpener(retryInterval: .milliseconds(50)) {
        opened.add()
        return try SessionStore(path: path)
      })
    await accounts.switchTo("alice")
    #expect(accounts.writeError?.contains("not open") == true)
    #expect(opened.count == 0)
    try await whileFollowing(accounts) {
      try await accounts.waitUntil { $0.phase == .following }
      try await SessionStore(path: path).logIn(as: "alice")
      try await accounts.waitUntil { $0.active?.username == "alice" }
    }
    #expect(opened.count == 1)
  }
}

/// How many times an opener ran.
final class OpenCount: Sendable {
  private let value = Mutex(0)
  var count: Int { value.withLock { $0 } }
  func add() { value.withLock { $0 += 1 } }
}
