import CommandLineKit
import SessionStorage

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The options of the commands that read the feed (`watch`, `history`), declared and read
/// once for both, like an option group of swift-argument-parser.
struct FeedOptions: Sendable {
  /// `--since <cursor>`: where to resume.
  static let since = CommandLineOption<FeedStart>(
    "since", placeholder: "cursor",
    help: "Start after this cursor (exclusive), e.g. the last one you saw. As CURSOR@TIME (the "
      + "time printed for that change, to the millisecond) it is checked first: exit 67 if the change "
      + "there committed at another time (a restore replaced it).")
  static let limit = CommandLineOption<Int>(
    "limit", short: "n", placeholder: "n", help: "Stop after this many changes.")
  static let account = CommandLineOption<String>(
    "account", placeholder: "username", help: "Only the changes of this account (see above).")

  /// All three, for a command's spec.
  static let declarations: [any NamedOption] = [since, limit, account]

  /// How `--account` finds its account, for both commands' help.
  static let accountDiscussion = """


    --account <username> names an account of the roster; a name no account has now is
    looked up in the history kept, newest change first, as the username before or after
    each change: the account that last had it, renamed or removed since. A name neither
    knows is refused (exit 65).
    """

  /// Where to start (exclusive); nil: the command's own default.
  let since: FeedStart?
  /// How many changes to print at most; nil: no limit.
  let limit: Int?
  /// The username of the one account to follow; nil: every account.
  let account: String?

  init(_ arguments: ParsedArguments) throws(InvalidValue) {
    since = try arguments[Self.since]
    limit = try arguments[Self.limit]
    account = try arguments[Self.account]
  }
}

/// The account `--account <username>` names: the roster's account of that name, else the
/// account whose change named it last in the history kept (renamed or removed since), so that
/// a removed account's history stays reachable by the name people knew it by.
struct AccountLookup: Sendable {
  /// The account.
  let id: AccountID
  /// Its state for `watch`'s snapshot line once the roster no longer holds it: no username,
  /// signed out, at its newest change kept; nil for an account the roster held.
  let removedState: SessionState?

  /// How many changes one query of the history search reads.
  static let pageSize = 256

  /// - Throws: ``CLIError`` (exit 65) when neither the roster nor the history kept names
  ///   `username`.
  init(store: SessionStore, username: String) throws {
    let roster = try store.roster()
    if let account = roster.account(named: username) {
      id = account.id
      removedState = nil
      return
    }
    // The history is read oldest first: the last match is the newest change naming it.
    var found: AccountID?
    var newest: [AccountID: Date] = [:]
    var start = FeedStart.beginning
    while true {
      let page = try store.history(from: start, limit: Self.pageSize)
      guard let last = page.last else { break }
      for entry in page {
        newest[entry.change.account] = entry.time
        if entry.change.before.username == username || entry.change.after.username == username {
          found = entry.change.account
        }
      }
      start = .after(last.cursor)
    }
    guard let found, let time = newest[found] else {
      throw CLIError.invalidInput(
        "no account is named '\(username)', in the roster or in the history kept ('sessionctl accounts' lists "
          + "the roster)")
    }
    id = found
    // A renamed account is still in the roster, under its new name.
    removedState =
      roster.account(id: found) == nil ? SessionState(username: nil, isLoggedIn: false, updatedAt: time) : nil
  }
}

extension FeedStart: CommandLineValue {
  /// Where `--since` resumes: `CURSOR`, or `CURSOR@TIME` with the time printed for that
  /// change, which is checked so that a rewritten history is not resumed silently.
  ///
  /// The time is taken only in the form every line prints it, to the millisecond in UTC
  /// (`2026-11-29T20:33:36.562Z`): anything else (no milliseconds, another zone, a
  /// placeholder) is a typing mistake, refused here, never compared with the stored time
  /// and taken for a rewritten history.
  package init(argument: String) throws(InvalidValue) {
    guard let at = argument.firstIndex(of: "@") else {
      do throws(InvalidValue) {
        self = .after(try Cursor(argument: argument))
      } catch {
        throw InvalidValue(
          expected: error.expected + " (a cursor), or CURSOR@TIME with the time printed for that change",
          noun: error.noun)
      }
      return
    }
    let time = String(argument[argument.index(after: at)...])
    guard let cursor = Cursor(String(argument[..<at])) else {
      throw InvalidValue(
        expected: "a whole number ≥ 0 before the '@' (the cursor of a change), then the time printed for it",
        noun: "cursor")
    }
    guard time.utf8.count == Self.printedTimeLength, let date = Timestamp.parse(time) else {
      let why = Timestamp.parse(time) != nil ? "; this one has no milliseconds" : ""
      throw InvalidValue(
        expected: "the time printed for change \(cursor) after the '@', as every line of watch and history "
          + "shows it: YYYY-MM-DDTHH:MM:SS.mmmZ, in UTC, with milliseconds\(why)",
        noun: "time")
    }
    self = .afterEntry(cursor, time: date)
  }

  /// The length of a time as lines print it: `2026-11-29T20:33:36.562Z`.
  static let printedTimeLength = 24
}

extension Cursor: CommandLineValue {
  /// A cursor as typed: a whole number ≥ 0, up to the largest cursor (`Int64.max`).
  package init(argument: String) throws(InvalidValue) {
    guard let cursor = Cursor(argument) else {
      throw InvalidValue(expected: Int.isDigits(argument) ? Int.range : "a whole number ≥ 0", noun: "cursor")
    }
    self = cursor
  }
}
