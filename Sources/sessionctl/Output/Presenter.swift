import SessionStorage

/// Turns results into output lines: short aligned text for people, or one JSON object per
/// line (`--json`). Pure, so tests can check every shape without a process. What only one
/// command prints is presented in that command's file.
struct Presenter: Sendable {
  /// Whether to print JSON Lines.
  let json: Bool

  /// `watch`'s first line: the snapshot's own text or JSON.
  func snapshot(_ snapshot: SessionSnapshot) throws -> String {
    json ? try JSONValue(encoding: snapshot).encoded : snapshot.description
  }

  /// One change, its columns padded to at least the given widths (`watch` streams, so it
  /// cannot measure the lines to come): the entry's own text or JSON.
  func change(_ entry: SessionEntry, cursorWidth: Int = 1, originWidth: Int = 10) throws -> String {
    json
      ? try JSONValue(encoding: entry).encoded
      : entry.line(cursorWidth: cursorWidth, originWidth: originWidth)
  }

  /// A write that changed nothing: the reason for people, the state and cursor for programs.
  func noChange(_ reason: String, _ snapshot: SessionSnapshot) throws -> String {
    json ? try JSONValue.noChange(snapshot).encoded : "no change: " + reason
  }

  /// `--version`.
  func version(_ version: String) -> String {
    json ? (["version": .string(version)] as JSONValue).encoded : "sessionctl \(version)"
  }

  /// Text safe for a terminal: `(none)` for nil; control characters (C0, DEL, C1), U+2028,
  /// U+2029 and format characters but U+200D (bidirectional controls, zero-width spaces…),
  /// which only an edit in the sqlite3 shell can store in a username, shown as
  /// `\u{1B}`-style escapes.
  static func display(_ text: String?) -> String { text.escapedForTerminal }

  /// `text` padded with spaces to `width` characters.
  static func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
  }

  /// Rows of a label and a value, the values aligned.
  func table(_ rows: [(String, String)]) -> [String] {
    let width = rows.map(\.0.count).max() ?? 0
    return rows.map { Self.padded($0.0, width) + "  " + $0.1 }
  }
}
