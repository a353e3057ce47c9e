import CommandLineKit
import SessionStorage

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

  /// Both, for a command's spec.
  static let declarations: [any NamedOption] = [since, limit]

  /// Where to start (exclusive); nil: the command's own default.
  let since: FeedStart?
  /// How many changes to print at most; nil: no limit.
  let limit: Int?

  init(_ arguments: ParsedArguments) throws(InvalidValue) {
    since = try arguments[Self.since]
    limit = try arguments[Self.limit]
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
