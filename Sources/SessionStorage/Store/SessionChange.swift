#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One committed change of the session: the states before and after, and what it means.
/// Its feed entry (``SessionEntry``) adds the cursor, time and origin.
public struct SessionChange: Sendable, Hashable, CustomStringConvertible {
  /// The state before the change.
  public let before: SessionState
  /// The state after the change.
  public let after: SessionState
  /// The typed events derived from ``before`` and ``after``.
  ///
  /// Empty when another client (the sqlite3 shell, another program) changed only the bytes
  /// of the username: stored another Unicode normalization of the same name (`Jose\u{301}`
  /// for `Jos\u{E9}`), or the same text as a BLOB. The file recorded a change, but Swift,
  /// which compares strings by canonical equivalence, sees the same name before and after.
  /// The library itself never writes such a change: a write that would change only those
  /// bytes is a no-op, in a file and in memory alike.
  ///
  /// Derived on each access (from the states before and after), not stored: a page of history
  /// builds no event a reader does not ask for.
  public var events: [SessionEvent] { SessionEvent.between(before, after) }

  /// Creates a change; its events are derived from the two states.
  public init(before: SessionState, after: SessionState) {
    self.before = before
    self.after = after
  }

  /// Whether ``events`` is not empty, without building them: the login state or the
  /// username (as Swift compares it) differs, which is what each event stands for.
  var hasEvents: Bool { before.isLoggedIn != after.isLoggedIn || before.username != after.username }

  /// The events, `, `-separated: `rename alice → bob, login bob`.
  public var description: String {
    let events = events
    return events.isEmpty ? "(no event)" : events.map(\.description).joined(separator: ", ")
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
    seq: Int64, at time: Date, origin: String?, oldUsername: String?, newUsername: String?,
    oldIsLoggedIn: Bool, newIsLoggedIn: Bool, oldUpdatedAt: Date
  ) {
    self.init(
      cursor: Cursor(seq), time: time, origin: origin ?? Origin.external,
      change: SessionChange(
        before: SessionState(username: oldUsername, isLoggedIn: oldIsLoggedIn, updatedAt: oldUpdatedAt),
        after: SessionState(username: newUsername, isLoggedIn: newIsLoggedIn, updatedAt: time)))
  }
}

extension FeedEntry: Codable where Change == SessionChange {
  private enum CodingKeys: String, CodingKey { case type, cursor, at, origin, events, before, after }

  /// Decodes a change line. Its events are derived from `before` and `after` again; a line
  /// whose `events` say otherwise is refused.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    try container.expectType("change", forKey: .type)
    let change = SessionChange(
      before: try container.decode(SessionState.self, forKey: .before),
      after: try container.decode(SessionState.self, forKey: .after))
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
  public var values: SessionValues { values(\.change.after) }
}

/// Who is signed in: the content of the `session` row.
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

/// What a change means, derived from the states before and after it.
///
/// Prints as `sessionctl` does (`login alice`, `logout alice`, `rename alice → bob`) and
/// encodes as its JSON: `{"type":"loggedIn","username":"alice"}`,
/// `{"type":"loggedOut","username":…}`, `{"type":"usernameChanged","from":…,"to":…}`.
public enum SessionEvent: Sendable, Hashable, Codable, CustomStringConvertible {
  /// The user signed in (the username may be nil when a shell user set only `is_logged_in`).
  case loggedIn(username: String?)
  /// The user signed out; the username is the one that was signed in.
  case loggedOut(username: String?)
  /// The username changed, whatever the login state.
  case usernameChanged(from: String?, to: String?)

  /// The events between two states, in the order a reader expects: sign-out of the old
  /// state, the rename, sign-in of the new state. One change may carry several.
  package static func between(_ before: SessionState, _ after: SessionState) -> [SessionEvent] {
    var events: [SessionEvent] = []
    if before.isLoggedIn && !after.isLoggedIn { events.append(.loggedOut(username: before.username)) }
    if before.username != after.username {
      events.append(.usernameChanged(from: before.username, to: after.username))
    }
    if !before.isLoggedIn && after.isLoggedIn { events.append(.loggedIn(username: after.username)) }
    return events
  }

  /// `login alice`, `logout alice` or `rename alice → bob`.
  public var description: String {
    switch self {
    case .loggedIn(let username): "login \(username.escapedForTerminal)"
    case .loggedOut(let username): "logout \(username.escapedForTerminal)"
    case .usernameChanged(let from, let to): "rename \(from.escapedForTerminal) → \(to.escapedForTerminal)"
    }
  }

  private enum CodingKeys: String, CodingKey { case type, username, from, to }

  /// Decodes one of the three JSON shapes.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let type = try container.decode(String.self, forKey: .type)
    switch type {
    case "loggedIn": self = .loggedIn(username: try container.decodeIfPresent(String.self, forKey: .username))
    case "loggedOut":
      self = .loggedOut(username: try container.decodeIfPresent(String.self, forKey: .username))
    case "usernameChanged":
      self = .usernameChanged(
        from: try container.decodeIfPresent(String.self, forKey: .from),
        to: try container.decodeIfPresent(String.self, forKey: .to))
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
