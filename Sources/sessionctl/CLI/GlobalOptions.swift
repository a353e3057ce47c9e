import CommandLineKit

/// The options of the root command: `--db` and `--json`, which every command takes, and
/// `--version`.
struct GlobalOptions: Sendable {
  /// `--db <path>`.
  static let db = Option<String>(
    "db", placeholder: "path", help: "The database file or PostgreSQL URL (default: see 'sessionctl help').",
    isInherited: true,
    completesFiles: true)
  /// `-j, --json`.
  static let json = Flag(
    "json", short: "j", help: "Print JSON Lines: one object per line.", isInherited: true)
  /// `--version`, alone on the line.
  static let version = Flag("version", help: "Show the version.")

  /// `--db`, if given.
  var db: String?
  /// `--json`.
  var json = false

  init() {}

  init(_ arguments: ParsedArguments) throws(InvalidValue) {
    db = try arguments[Self.db]
    json = arguments[Self.json]
  }
}
