#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One committed change of one account: its state before and after, whether it was and is
/// the active account, and what that means. Its feed entry (``SessionEntry``) adds the
/// cursor, time and origin.
///
/// A state with no username stands for "not in the roster": ``before`` of an account's
/// first change, ``after`` of its removal.
public struct SessionChange: Sendable, Hashable, CustomStringConvertible {
  /// The account the change concerns.
  public let account: AccountID
  /// The account's state before the change (no username: it was not in the roster).
  public let before: SessionState
  /// The account's state after the change (no username: it left the roster).
  public let after: SessionState
  /// Whether the account was the active one before the change.
  public let wasActive: Bool
  /// Whether the account is the active one after the change.
  public let isActive: Bool

  /// The typed events derived from the states and the active flags.
  ///
  /// Empty when another client (the sqlite3 shell, another program) changed only the bytes
  /// of the username: stored another Unicode normalization of the same name (`Jose\u{301}`
  /// for `Jos\u{E9}`), or the same text as a BLOB. The file recorded a change, but Swift,
  /// which compares strings by canonical equivalence, sees the same name before and after.
  /// The library itself never writes such a change: a write that would change only those
  /// bytes is a no-op, in a file and in memory alike.
  ///
  /// Derived on each access, not stored: a page of history builds no event a reader does
  /// not ask for.
  public var events: [SessionEvent] { SessionEvent.between(self) }

  /// Creates a change; its events are derived from the states and flags.
  public init(account: AccountID, before: SessionState, after: SessionState, wasActive: Bool, isActive: Bool)
  {
    self.account = account
    self.before = before
    self.after = after
    self.wasActive = wasActive
    self.isActive = isActive
  }

  /// The account's username: after the change, or before it for a removal.
  public var username: String? { after.username ?? before.username }

  /// The events, `, `-separated: `add bob, login bob, activate bob`.
  public var description: String {
    let events = events
    return events.isEmpty ? "(no event)" : events.map(\.description).joined(separator: ", ")
  }

  /// The active account's state after this change, given `state`, the one before it: the
  /// change's ``after`` when it leaves its account active, no username when it ends the
  /// active account's turn, else `state` unchanged. ``SessionStore/values()`` folds the feed
  /// with it.
  public func activeState(after state: SessionState, at time: Date) -> SessionState {
    if isActive { return after }
    if wasActive { return SessionState(username: nil, isLoggedIn: false, updatedAt: time) }
    return state
  }
}

/// A session change in the feed: `entry.cursor`, `entry.time`, `entry.origin`, and the
/// change's members directly (`entry.before`, `entry.after`, `entry.events`).
///
/// Prints like a `sessionctl watch` line
/// (`7  2026-11-29T20:33:36.256Z  sessionctl  rename bob → carol, login carol`);
/// `entry.jsonLine` is its JSON change line, byte for byte:
/// `{"type":"change","cursor":7,"at":…,"origin":…,"events":[…],"before":{…},"after":{…}}`.
/// Its `Codable` conformance reads and writes the same members.
public typealias SessionEntry = FeedEntry<SessionChange>

/// A live subscription to every session change after a cursor: an `AsyncSequence` that
/// waits for each commit and ends only when its task is cancelled (or with an error).
public typealias SessionSubscription = FeedSubscription<SessionChange, SessionState>

/// The state now and each new state, for view models: an `AsyncSequence` that ends only
/// when its task is cancelled.
public typealias SessionValues = FeedValues<SessionChange, SessionState>

/// A snapshot of the state and a live subscription to every change after it.
public typealias SessionSnapshotSubscription = SnapshotSubscription<SessionChange, SessionState>

extension FeedEntry: CustomStringConvertible where Change == SessionChange {
  /// `7  2026-11-29T20:33:36.256Z  sessionctl  rename bob → carol, login carol`: the cursor,
  /// the time, the origin padded to 10 columns, and the events.
  public var description: String { line(cursorWidth: 1, originWidth: 10) }

  /// The line with its cursor and origin padded to at least these widths, so that lines
  /// printed together align.
  package func line(cursorWidth: Int, originWidth: Int) -> String {
    func padded(_ text: String, _ width: Int) -> String {
      text + String(repeating: " ", count: max(0, width - text.count))
    }
    return [
      padded(cursor.description, cursorWidth), Timestamp.format(time),
      padded(origin.escapedForTerminal, originWidth), change.description,
    ].joined(separator: "  ")
  }
}

extension FeedEntry where Change == SessionChange {
  /// The entry of a `session_changes` row, its columns in the order of every store's
  /// schema, its times read by ``Timestamp/stored(_:)``: the same decoding for the SQLite
  /// and the PostgreSQL store.
  package init(
    seq: Int64, at time: Date, origin: String?, account: Int64, oldUsername: String?, newUsername: String?,
    oldIsLoggedIn: Bool, newIsLoggedIn: Bool, oldUpdatedAt: Date, wasActive: Bool, isActive: Bool
  ) {
    self.init(
      cursor: Cursor(seq), time: time, origin: origin ?? Origin.external,
      change: SessionChange(
        account: AccountID(account),
        before: SessionState(username: oldUsername, isLoggedIn: oldIsLoggedIn, updatedAt: oldUpdatedAt),
        after: SessionState(username: newUsername, isLoggedIn: newIsLoggedIn, updatedAt: time),
        wasActive: wasActive, isActive: isActive))
  }
}

extension FeedEntry: Codable where Change == SessionChange {
  private enum CodingKeys: String, CodingKey {
    case type, cursor, at, origin, account, events, before, after, wasActive, isActive
  }

  /// Decodes a change line. Its events are derived from the states and flags again; a line
  /// whose `events` say otherwise is refused.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try container.expectType("change", forKey: .type)
    let change = SessionChange(
      account: try container.decode(AccountID.self, forKey: .account),
      before: try container.decode(SessionState.self, forKey: .before),
      after: try container.decode(SessionState.self, forKey: .after),
      wasActive: try container.decode(Bool.self, forKey: .wasActive),
      isActive: try container.decode(Bool.self, forKey: .isActive))
    guard try container.decode([SessionEvent].self, forKey: .events) == change.events else {
      throw DecodingError.dataCorruptedError(
        forKey: .events, in: container,
        debugDescription: "the events are not the ones between before and after")
    }
    self.init(
      cursor: try container.decode(Cursor.self, forKey: .cursor),
      time: try container.decodeTimestamp(forKey: .at),
      origin: try container.decode(String.self, forKey: .origin), change: change)
  }

  /// Encodes the change line's members (those of ``jsonLine``, in the order the encoder
  /// chooses).
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension SnapshotSubscription where Change == SessionChange, Snapshot == SessionState {
  /// Each state after the snapshot's `state`, consecutive equal states dropped: for a view
  /// model that showed that state already (one read), then follows from its `cursor`.
  public var values: SessionValues { values(SessionChange.activeStateAfter) }
}

extension SessionChange {
  /// The active account's state after `entry`, given the one before it: how the feed's
  /// values fold entries.
  package static let activeStateAfter: @Sendable (SessionState, SessionEntry) -> SessionState = {
    state, entry in
    entry.change.activeState(after: state, at: entry.time)
  }
}

/// An account's username, login state and time: the active account's in ``SessionStore/state``
/// (the `session` view of the file), any account's in a ``SessionChange``.
///
/// Prints like `sessionctl`'s lines (`alice, logged in, updated 2026-11-29T20:33:33.897Z`)
/// and encodes as its JSON state object:
/// `{"username":"alice","isLoggedIn":true,"updatedAt":"2026-11-29T20:33:33.897Z"}`.
public struct SessionState: Sendable, Hashable, Codable, CustomStringConvertible, SessionProviding {
  /// The username, or nil when none was ever set. Kept on logout (see ``SessionStore/logOut()``).
  public var username: String?
  /// Whether the user is signed in.
  public var isLoggedIn: Bool
  /// When the state last changed, to the millisecond (as the file stores it).
  public var updatedAt: Date

  /// Creates a state.
  public init(username: String?, isLoggedIn: Bool, updatedAt: Date) {
    self.username = username
    self.isLoggedIn = isLoggedIn
    self.updatedAt = updatedAt
  }

  /// `alice, logged in, updated 2026-11-29T20:33:33.897Z`; `(none)` for no username, and
  /// control and format characters escaped (`\u{202E}`), as `sessionctl` prints them.
  public var description: String {
    "\(username.escapedForTerminal), \(isLoggedIn ? "logged in" : "logged out"), "
      + "updated \(Timestamp.format(updatedAt))"
  }

  private enum CodingKeys: String, CodingKey { case username, isLoggedIn, updatedAt }

  /// Decodes a JSON state object; `updatedAt` must be in the feed's time format.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    username = try container.decodeIfPresent(String.self, forKey: .username)
    isLoggedIn = try container.decode(Bool.self, forKey: .isLoggedIn)
    updatedAt = try container.decodeTimestamp(forKey: .updatedAt)
  }

  /// Encodes `{"username":…,"isLoggedIn":…,"updatedAt":…}`, with `null` for no username.
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension KeyedDecodingContainer {
  /// A time in the feed's format (`2026-11-29T20:33:33.897Z`).
  func decodeTimestamp(forKey key: Key) throws -> Date {
    let text = try decode(String.self, forKey: key)
    guard let date = Timestamp.parse(text) else {
      throw DecodingError.dataCorruptedError(
        forKey: key, in: self, debugDescription: "'\(text)' is not a time like 2026-11-29T20:33:33.897Z")
    }
    return date
  }
}

/// What a change means, derived from the states and active flags before and after it.
///
/// Prints as `sessionctl` does (`add alice`, `login alice`, `logout alice`,
/// `rename alice → bob`, `activate alice`, `deactivate alice`, `remove alice`) and encodes
/// as its JSON: `{"type":"added","username":"alice"}`, `{"type":"loggedIn","username":…}`,
/// `{"type":"loggedOut","username":…}`, `{"type":"usernameChanged","from":…,"to":…}`,
/// `{"type":"activated","username":…}`, `{"type":"deactivated","username":…}`,
/// `{"type":"removed","username":…}`.
public enum SessionEvent: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The account joined the roster.
  case added(username: String?)
  /// The account signed in (the username may be nil in a 1.x entry where a shell user set
  /// only `is_logged_in`).
  case loggedIn(username: String?)
  /// The account signed out; the username is the one that was signed in.
  case loggedOut(username: String?)
  /// The username changed, whatever the login state.
  case usernameChanged(from: String?, to: String?)
  /// The account became the active one.
  case activated(username: String?)
  /// The account stopped being the active one and stays in the roster, none active in its
  /// place (only an edit by hand of the active pointer does this).
  case deactivated(username: String?)
  /// The account left the roster; when it was active, none is active after it.
  case removed(username: String?)

  /// The events of `change`, in the order a reader expects: the account joins, signs out,
  /// is renamed, signs in, becomes active or stops being so, leaves. One change may carry
  /// several: a first login is `added`, `loggedIn`, `activated`.
  package static func between(_ change: SessionChange) -> [SessionEvent] {
    let (before, after) = (change.before, change.after)
    let joins = before.username == nil && after.username != nil
    let leaves = before.username != nil && after.username == nil
    var events: [SessionEvent] = []
    if joins { events.append(.added(username: after.username)) }
    if before.isLoggedIn && !after.isLoggedIn { events.append(.loggedOut(username: before.username)) }
    if before.username != after.username, !joins, !leaves {
      events.append(.usernameChanged(from: before.username, to: after.username))
    }
    if !before.isLoggedIn && after.isLoggedIn { events.append(.loggedIn(username: after.username)) }
    if !change.wasActive && change.isActive { events.append(.activated(username: after.username)) }
    if change.wasActive && !change.isActive && !leaves {
      events.append(.deactivated(username: after.username))
    }
    if leaves { events.append(.removed(username: before.username)) }
    return events
  }

  /// `add alice`, `login alice`, `logout alice`, `rename alice → bob`, `activate alice`,
  /// `deactivate alice` or `remove alice`.
  public var description: String {
    switch self {
    case .added(let username): "add \(username.escapedForTerminal)"
    case .loggedIn(let username): "login \(username.escapedForTerminal)"
    case .loggedOut(let username): "logout \(username.escapedForTerminal)"
    case .usernameChanged(let from, let to): "rename \(from.escapedForTerminal) → \(to.escapedForTerminal)"
    case .activated(let username): "activate \(username.escapedForTerminal)"
    case .deactivated(let username): "deactivate \(username.escapedForTerminal)"
    case .removed(let username): "remove \(username.escapedForTerminal)"
    }
  }

  private enum CodingKeys: String, CodingKey { case type, username, from, to }

  /// Decodes one of the JSON shapes.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let type = try container.decode(String.self, forKey: .type)
    func username() throws -> String? { try container.decodeIfPresent(String.self, forKey: .username) }
    switch type {
    case "added": self = .added(username: try username())
    case "loggedIn": self = .loggedIn(username: try username())
    case "loggedOut": self = .loggedOut(username: try username())
    case "usernameChanged":
      self = .usernameChanged(
        from: try container.decodeIfPresent(String.self, forKey: .from),
        to: try container.decodeIfPresent(String.self, forKey: .to))
    case "activated": self = .activated(username: try username())
    case "deactivated": self = .deactivated(username: try username())
    case "removed": self = .removed(username: try username())
    default:
      throw DecodingError.dataCorruptedError(
        forKey: .type, in: container, debugDescription: "unknown event type \"\(type)\"")
    }
  }

  /// Encodes `{"type":…}` and the usernames, `null` for none.
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

/// The state and the cursor of the newest change it includes, read in one transaction.
///
/// Follow it with ``SessionStore/changes(from:)`` from `.after(snapshot.cursor)` and no
/// change is missed or repeated. Prints like `sessionctl watch`'s first line; ``jsonLine`` is
/// its JSON line, byte for byte: `{"type":"snapshot","cursor":4,"state":{…}}`.
public struct SessionSnapshot: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The state at ``cursor``.
  public var state: SessionState
  /// The newest entry included in ``state`` (`Cursor.zero` before the first change).
  public var cursor: Cursor

  /// Creates a snapshot.
  public init(state: SessionState, cursor: Cursor) {
    self.state = state
    self.cursor = cursor
  }

  /// `snapshot at 4: alice, logged in, updated 2026-11-29T20:33:33.897Z`.
  public var description: String { "snapshot at \(cursor): \(state)" }

  private enum CodingKeys: String, CodingKey { case type, cursor, state }

  /// Decodes `{"type":"snapshot","cursor":N,"state":{…}}`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try container.expectType("snapshot", forKey: .type)
    cursor = try container.decode(Cursor.self, forKey: .cursor)
    state = try container.decode(SessionState.self, forKey: .state)
  }

  /// Encodes `{"type":"snapshot","cursor":N,"state":{…}}` (the members of ``jsonLine``, in
  /// the order the encoder chooses).
  public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension KeyedDecodingContainer {
  /// Throws unless the string at `key` is `expected` (the `"type"` member of a line).
  func expectType(_ expected: String, forKey key: Key) throws {
    let type = try decode(String.self, forKey: key)
    guard type == expected else {
      throw DecodingError.dataCorruptedError(
        forKey: key, in: self, debugDescription: "expected \"type\":\"\(expected)\", found \"\(type)\"")
    }
  }
}
