#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A write to the roster, its usernames already validated, and what it expects to find.
package struct SessionWrite: Sendable {
  /// What the write does.
  package enum Action: Sendable, Equatable {
    /// Signs in this username: an account in the roster signs in and becomes active; a new
    /// one joins, signed in and active. Other accounts stay as they are.
    case logIn(String)
    /// Signs out the named account, or the active one for nil; it stays in the roster.
    case logOut(String?)
    /// Signs out every signed-in account, one entry each.
    case logOutAll
    /// Renames the named account, or the active one for nil.
    case rename(String?, to: String)
    /// Makes the named account the active one, changing no login state.
    case switchTo(String)
    /// Takes the named account out of the roster; nothing becomes active in its place.
    case remove(String)
  }

  package let action: Action
  package let condition: WriteCondition?

  private init(_ action: Action, _ condition: WriteCondition?) {
    self.action = action
    self.condition = condition
  }

  /// Validates `username` and makes a login.
  package static func logIn(_ username: String, expecting condition: WriteCondition? = nil) throws -> Self {
    Self(.logIn(try Username.validated(username)), condition)
  }

  /// Makes a logout of the named account (validated), or of the active one for nil.
  package static func logOut(_ username: String? = nil, expecting condition: WriteCondition? = nil) throws
    -> Self
  {
    Self(.logOut(try username.map(Username.validated)), condition)
  }

  /// Makes a logout of every account; a condition on one account is refused.
  package static func logOutAll(expecting condition: WriteCondition? = nil) throws -> Self {
    if case .account = condition {
      throw SessionStorageError(
        .invalidArgument, "signing out every account concerns no one account: expect the head cursor instead")
    }
    return Self(.logOutAll, condition)
  }

  /// Validates both usernames and makes a rename of the named account, or the active one.
  package static func rename(
    _ username: String? = nil, to newName: String, expecting condition: WriteCondition? = nil
  )
    throws -> Self
  {
    Self(.rename(try username.map(Username.validated), to: try Username.validated(newName)), condition)
  }

  /// Validates `username` and makes a switch to it.
  package static func switchTo(_ username: String, expecting condition: WriteCondition? = nil) throws -> Self
  {
    Self(.switchTo(try Username.validated(username)), condition)
  }

  /// Validates `username` and makes its removal.
  package static func remove(_ username: String, expecting condition: WriteCondition? = nil) throws -> Self {
    Self(.remove(try Username.validated(username)), condition)
  }

  /// The username the write names (nil for the active account, or every account).
  var named: String? {
    switch action {
    case .logIn(let name), .switchTo(let name), .remove(let name): name
    case .logOut(let name), .rename(let name, _): name
    case .logOutAll: nil
    }
  }

  /// The changes this write makes to the store `roster` describes, in the order they
  /// commit (one for every write but ``Action/logOutAll``); empty when it changes nothing.
  ///
  /// Every backend plans its writes here, inside the transaction that applies them, on what
  /// that transaction reads: the same write finds the same answer, refusal or no-op in a
  /// file, in memory and on a server.
  /// - Throws: `conflict` when the condition does not hold; `accountNotFound`,
  ///   `usernameTaken` or `rosterFull` when the write cannot apply.
  package func plan(on roster: some RosterReading) throws -> [PlannedChange] {
    try check(condition, on: roster)
    let active = try roster.activeAccount()
    func account(_ name: String) throws -> Account {
      guard let found = try roster.account(named: name) else {
        throw SessionStorageError(.accountNotFound, "no account is named '\(name.escapedForTerminal)'")
      }
      return found
    }
    /// The named account, or the active one for no name (nil when none is active).
    func target(_ name: String?) throws -> Account? { try name.map(account) ?? active }
    func change(_ account: Account, username: String? = nil, isLoggedIn: Bool? = nil, isActive: Bool? = nil)
      -> [PlannedChange]
    {
      let wasActive = account.id == active?.id
      let planned = PlannedChange(
        account: account.id, before: account.state,
        after: (username ?? account.username, isLoggedIn ?? account.isLoggedIn), wasActive: wasActive,
        isActive: isActive ?? wasActive)
      return planned.changesNothing ? [] : [planned]
    }
    /// A new account named `name` joining the roster, active.
    func join(_ name: String, loggedIn: Bool) throws -> [PlannedChange] {
      try requireRoom(on: roster, for: name)
      return [
        PlannedChange(
          account: nil,
          before: SessionState(username: nil, isLoggedIn: false, updatedAt: Date(timeIntervalSince1970: 0)),
          after: (name, loggedIn), wasActive: false, isActive: true)
      ]
    }
    switch action {
    case .logIn(let name):
      if let existing = try roster.account(named: name) {
        // The name as given (NFC) replaces a stored one that differs only in its bytes,
        // whenever the login changes something else.
        return change(existing, username: name, isLoggedIn: true, isActive: true)
      }
      return try join(name, loggedIn: true)
    case .logOut(let name):
      guard let signingOut = try target(name) else { return [] }
      return change(signingOut, isLoggedIn: false)
    case .logOutAll:
      return try roster.signedIn().flatMap { change($0, isLoggedIn: false) }
    case .rename(let name, let newName):
      guard let renamed = try target(name) else {
        // No account is active: the name joins, signed out and active.
        if try roster.account(named: newName) != nil {
          throw SessionStorageError(
            .usernameTaken,
            "an account is named '\(newName.escapedForTerminal)' already: switch to it instead")
        }
        return try join(newName, loggedIn: false)
      }
      if let other = try roster.account(named: newName), other.id != renamed.id {
        throw SessionStorageError(
          .usernameTaken,
          "another account is named '\(newName.escapedForTerminal)': remove it or pick another name")
      }
      return renamed.username == newName ? [] : change(renamed, username: newName)
    case .switchTo(let name):
      return change(try account(name), isActive: true)
    case .remove(let name):
      let removed = try account(name)
      return [
        PlannedChange(
          account: removed.id, before: removed.state, after: nil, wasActive: removed.id == active?.id,
          isActive: false)
      ]
    }
  }

  /// Throws `rosterFull` when the roster holds ``SessionRoster/limit`` accounts.
  private func requireRoom(on roster: some RosterReading, for name: String) throws {
    guard try roster.accountCount() < SessionRoster.limit else {
      throw SessionStorageError(
        .rosterFull,
        "the store holds \(SessionRoster.limit) accounts, its limit: remove one before adding '\(name.escapedForTerminal)'"
      )
    }
  }

  /// Throws `conflict` unless the store (or the account the write names) is where
  /// `condition` expects.
  private func check(_ condition: WriteCondition?, on roster: some RosterReading) throws {
    switch condition {
    case nil: return
    case .head(let expected):
      let head = try roster.head()
      guard head == expected else {
        throw SessionStorageError(
          .conflict,
          "the store is at cursor \(head), not at \(expected) as the write expected: another write committed "
            + "first; nothing was written")
      }
    case .account(let expected):
      let account = try named.map { try roster.account(named: $0) } ?? roster.activeAccount()
      let found = account?.cursor ?? .zero
      guard found == expected else {
        let who = named.map { "'\($0.escapedForTerminal)'" } ?? "the active account"
        throw SessionStorageError(
          .conflict,
          "\(who) is at cursor \(found), not at \(expected) as the write expected: another write committed "
            + "first; nothing was written")
      }
    }
  }
}

/// What a write's transaction reads of the store to plan it (see ``SessionWrite/plan(on:)``):
/// each backend answers from the transaction that then applies the plan.
package protocol RosterReading {
  /// The newest cursor.
  func head() throws -> Cursor
  /// The active account, or nil.
  func activeAccount() throws -> Account?
  /// The account with this username (stored in NFC; `username` is NFC), or nil.
  func account(named username: String) throws -> Account?
  /// How many accounts the roster holds.
  func accountCount() throws -> Int
  /// Every signed-in account, by identifier.
  func signedIn() throws -> [Account]
}

/// One change a write makes to one account, as planned before the backend applies it.
package struct PlannedChange: Sendable, Equatable {
  /// The account, or nil for a new one (the backend assigns its identifier).
  package var account: AccountID?
  /// Its state before (no username for a new account).
  package var before: SessionState
  /// Its username and login state after, or nil when it leaves the roster.
  package var after: (username: String, isLoggedIn: Bool)?
  /// Whether it was active before, and is after.
  package var wasActive: Bool
  package var isActive: Bool

  package static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.account == rhs.account && lhs.before == rhs.before && lhs.after?.username == rhs.after?.username
      && lhs.after?.isLoggedIn == rhs.after?.isLoggedIn && lhs.wasActive == rhs.wasActive
      && lhs.isActive == rhs.isActive
  }

  /// Whether nothing differs: as Swift compares names, so a name that differs only in its
  /// Unicode normalization is the same name.
  var changesNothing: Bool {
    guard let after else { return false }
    return account != nil && after.username == before.username && after.isLoggedIn == before.isLoggedIn
      && wasActive == isActive
  }

  /// The change this plan commits as `account`, at `time` (also the "before" time of an
  /// account that joins).
  package func change(account id: AccountID, at time: Date) -> SessionChange {
    var before = before
    if before.username == nil { before.updatedAt = time }
    return SessionChange(
      account: id, before: before,
      after: SessionState(username: after?.username, isLoggedIn: after?.isLoggedIn ?? false, updatedAt: time),
      wasActive: wasActive, isActive: isActive)
  }
}

/// What a write did, as its own transaction saw it: the entry it committed, or the state
/// and cursor it found when it changed nothing. A response built from it is one atomic
/// observation: no other writer's commit can fall between the write and what it reports.
package enum WriteOutcome: Sendable, Equatable {
  /// The write committed these entries (one for every write but a logout of every
  /// account), consecutive, in one transaction.
  case committed([SessionEntry])
  /// The write changed nothing: this is the state (and its cursor) it found, read in its
  /// own transaction.
  case unchanged(SessionSnapshot)

  /// The entries committed; none when the write changed nothing.
  package var entries: [SessionEntry] {
    if case .committed(let entries) = self { entries } else { [] }
  }

  /// The (last) committed entry, or nil when the write changed nothing.
  package var entry: SessionEntry? { entries.last }
}

/// The rules for the name a store records as the origin of its writes, the same for every
/// store (``SessionStore/FileOptions/origin`` and the other backends' origins).
package enum Origin {
  /// The origin of every change made by a client other than this library (the sqlite3
  /// shell, `psql`, another program); no store may take it.
  package static let external = "external"

  /// The most characters an origin may have.
  static let maximumLength = 64

  /// Throws `invalidOrigin` unless `origin` is 1 to 64 characters, none of them a control
  /// character, and not `external`.
  package static func validate(_ origin: String) throws {
    guard !origin.isEmpty, origin.count <= maximumLength, origin != external,
      origin.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
    else {
      throw SessionStorageError(
        .invalidOrigin,
        "origin '\(origin.escapedForTerminal)' must be 1 to \(maximumLength) printable characters and not "
          + "'\(external)'")
    }
  }
}
