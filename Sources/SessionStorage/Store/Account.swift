#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// An account's identifier: assigned by the store when the account joins the roster, and
/// never given to another account, also after this one is removed.
public struct AccountID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
  /// The number the store assigned (the first account of a store is 1).
  public let value: Int64

  /// The identifier with this number.
  public init(_ value: Int64) { self.value = value }

  /// Whether `lhs` was assigned before `rhs`.
  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }

  /// The number, as `sessionctl accounts` prints it.
  public var description: String { String(value) }

  /// Decodes a JSON number.
  public init(from decoder: any Decoder) throws {
    value = try decoder.singleValueContainer().decode(Int64.self)
  }

  /// Encodes a JSON number.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(value)
  }
}

/// One account of a store's roster: who, whether signed in, since when.
///
/// Prints like `sessionctl accounts` (`alice, logged in, updated 2026-11-29T20:33:33.897Z`);
/// encodes as `{"id":1,"username":"alice","isLoggedIn":true,"updatedAt":…,"cursor":7}`.
public struct Account: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The store's identifier for the account; it never changes, also on rename.
  public let id: AccountID
  /// The username: unique within the store (as Swift compares strings), stored in NFC.
  public var username: String
  /// Whether the account is signed in.
  public var isLoggedIn: Bool
  /// When the newest change concerning the account committed (its entry's time).
  public var updatedAt: Date
  /// The cursor of the newest change concerning the account: what a write conditioned on the
  /// account (``WriteCondition/account(_:)``) expects.
  public var cursor: Cursor

  /// Creates an account.
  public init(id: AccountID, username: String, isLoggedIn: Bool, updatedAt: Date, cursor: Cursor) {
    self.id = id
    self.username = username
    self.isLoggedIn = isLoggedIn
    self.updatedAt = updatedAt
    self.cursor = cursor
  }

  /// The account's username, login state and time, as ``SessionState``.
  public var state: SessionState {
    SessionState(username: username, isLoggedIn: isLoggedIn, updatedAt: updatedAt)
  }

  /// `alice, logged in, updated 2026-11-29T20:33:33.897Z`.
  public var description: String { state.description }

  private enum CodingKeys: String, CodingKey { case id, username, isLoggedIn, updatedAt, cursor }

  /// Decodes `{"id":…,"username":…,"isLoggedIn":…,"updatedAt":…,"cursor":…}`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(AccountID.self, forKey: .id)
    username = try container.decode(String.self, forKey: .username)
    isLoggedIn = try container.decode(Bool.self, forKey: .isLoggedIn)
    updatedAt = try container.decodeTimestamp(forKey: .updatedAt)
    cursor = try container.decode(Cursor.self, forKey: .cursor)
  }

  /// Encodes the members of its JSON object.
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

  /// `{"id":…,"username":…,"isLoggedIn":…,"updatedAt":…,"cursor":…}`.
  package var json: JSONValue {
    [
      "id": .int(id.value), "username": .string(username), "isLoggedIn": .bool(isLoggedIn),
      "updatedAt": .string(Timestamp.format(updatedAt)), "cursor": .int(cursor.value),
    ]
  }
}

/// A store's accounts, which one is active, and the cursor of the newest change they
/// include, read in one transaction.
///
/// Follow it with ``SessionStore/changes(from:)`` from `.after(roster.cursor)`, folding each
/// entry in with ``applying(_:)``, and it stays what the store holds: no change is missed or
/// repeated.
public struct SessionRoster: Sendable, Hashable, Codable {
  /// The most accounts a store holds. A login that would add one more is refused with
  /// `rosterFull`; the SQLite and PostgreSQL schemas refuse such a row typed by hand too.
  public static let limit = 1000

  /// Every account, by identifier (the order they joined).
  public var accounts: [Account]
  /// The active account's identifier; nil when the roster is empty or the active account
  /// was removed (nothing is promoted in its place).
  public var activeID: AccountID?
  /// When the active account last changed (to another account or to none).
  public var activeSince: Date
  /// The newest change the roster includes (`Cursor.zero` before the first).
  public var cursor: Cursor

  /// Creates a roster.
  public init(accounts: [Account], activeID: AccountID?, activeSince: Date, cursor: Cursor) {
    self.accounts = accounts
    self.activeID = activeID
    self.activeSince = activeSince
    self.cursor = cursor
  }

  /// The active account, or nil.
  public var active: Account? { activeID.flatMap(account(id:)) }

  /// The account with this identifier, or nil.
  public func account(id: AccountID) -> Account? { accounts.first { $0.id == id } }

  /// The account with this username (as Swift compares strings), or nil.
  public func account(named username: String) -> Account? { accounts.first { $0.username == username } }

  /// What ``SessionStore/state`` reads: the active account's state, or no username, signed
  /// out, since ``activeSince`` when no account is active.
  public var state: SessionState {
    active?.state ?? SessionState(username: nil, isLoggedIn: false, updatedAt: activeSince)
  }

  /// The roster after `entry`, which must be the change right after ``cursor``.
  public func applying(_ entry: SessionEntry) -> SessionRoster {
    var roster = self
    let change = entry.change
    roster.accounts.removeAll { $0.id == change.account }
    if let username = change.after.username {
      let account = Account(
        id: change.account, username: username, isLoggedIn: change.after.isLoggedIn, updatedAt: entry.time,
        cursor: entry.cursor)
      let index = roster.accounts.firstIndex { $0.id > change.account } ?? roster.accounts.endIndex
      roster.accounts.insert(account, at: index)
    }
    if change.isActive {
      roster.activeID = change.account
    } else if change.wasActive {
      roster.activeID = nil
    }
    if change.isActive != change.wasActive { roster.activeSince = entry.time }
    roster.cursor = entry.cursor
    return roster
  }

  private enum CodingKeys: String, CodingKey { case type, cursor, active, activeSince, accounts }

  /// Decodes `{"type":"roster","cursor":…,"active":…,"activeSince":…,"accounts":[…]}`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try container.expectType("roster", forKey: .type)
    cursor = try container.decode(Cursor.self, forKey: .cursor)
    activeID = try container.decodeIfPresent(AccountID.self, forKey: .active)
    activeSince = try container.decodeTimestamp(forKey: .activeSince)
    accounts = try container.decode([Account].self, forKey: .accounts)
  }

  /// Encodes the members of ``jsonLine``.
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

  /// `{"type":"roster","cursor":…,"active":…,"activeSince":…,"accounts":[…]}`.
  package var json: JSONValue {
    [
      "type": "roster", "cursor": .int(cursor.value), "active": activeID.map { .int($0.value) } ?? .null,
      "activeSince": .string(Timestamp.format(activeSince)), "accounts": .array(accounts.map(\.json)),
    ]
  }

  /// The line `sessionctl accounts --json` prints, byte for byte, without the newline.
  public var jsonLine: String { json.encoded }
}

/// What a conditional write expects to find; when the store is elsewhere, the write is
/// refused with `conflict` and changes nothing.
///
/// It closes the stale-writer race: a token refresh that read the store at cursor 7 and
/// writes with `.head(7)` cannot overwrite a sign-out another process committed at 8.
public enum WriteCondition: Sendable, Hashable, CustomStringConvertible {
  /// The store's newest cursor is this one: no change of any account committed since.
  case head(Cursor)
  /// The newest change concerning the account the write names (the active one for a write
  /// that names none) is at this cursor; `Cursor.zero` expects no such account.
  case account(Cursor)

  /// `head 7` or `account at 7`.
  public var description: String {
    switch self {
    case .head(let cursor): "head \(cursor)"
    case .account(let cursor): "account at \(cursor)"
    }
  }
}
