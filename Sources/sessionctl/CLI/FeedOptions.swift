import CommandLineKit
import SessionStorage

/// The options of the commands that read the feed (`watch`, `history`), declared and read
/// once for both, like an option group of swift-argument-parser.
struct FeedOptions: Sendable {
  /// `--since <cursor>`: where to resume.
  static let since = Option<FeedStart>(
    "since", placeholder: "cursor",
    help: "Start after this cursor (exclusive), e.g. the last one you saw. As CURSOR@TIME (the "
      + "time printed for that change) it is checked first: exit 67 if a restore replaced it.")
  /// `-n, --limit <n>`.
  static let limit = Option<Int>("limit", short: "n", placeholder: "n", help: "Stop after this many changes.")

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
