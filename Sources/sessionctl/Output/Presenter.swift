import SessionStorage

/// Turns results into output lines: short aligned text for people, or one JSON object per
/// line (`--json`). Pure, so tests can check every shape without a process.
struct Presenter: Sendable {
  /// Whether to print JSON Lines.
  let json: Bool

  /// `status`: the state, its cursor and the file; people also get the greeting.
  func status(_ snapshot: SessionSnapshot, path: String, greeting: String) throws -> [String] {
    if json { return [try JSONValue.status(snapshot).encoded] }
    let state = snapshot.state
    return table([
      ("greeting", Self.display(greeting)),
      ("username", Self.display(state.username)),
      ("logged in", state.isLoggedIn ? "yes" : "no"),
      ("updated", Timestamp.format(state.updatedAt)),
      ("cursor", snapshot.cursor.description),
      ("database", Self.display(path)),
    ])
  }

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

  /// `compact`.
  func compaction(_ compaction: SessionStore.Compaction) -> String {
    let bounds = compaction.bounds
    if json {
      let value: JSONValue = [
        "type": "compaction", "removed": .int(Int64(compaction.removed)),
        "oldest": bounds.oldest.map { .int($0.value) } ?? .null, "head": .int(bounds.head.value),
      ]
      return value.encoded
    }
    let removed = "removed \(compaction.removed) \(compaction.removed == 1 ? "entry" : "entries")"
    guard let oldest = bounds.oldest else { return removed + "; none kept (head \(bounds.head))" }
    return removed + "; kept \(oldest)…\(bounds.head)"
  }

  /// `migrate`.
  func migration(path: String, created: Bool, applied: [Migration]) -> [String] {
    if json {
      let migrations: [JSONValue] = applied.map {
        ["version": .int(Int64($0.version)), "name": .string($0.name), "checksum": .string($0.checksum)]
      }
      let value: JSONValue = [
        "type": "migrate", "path": .string(path), "created": .bool(created), "applied": .array(migrations),
      ]
      return [value.encoded]
    }
    var lines = created ? ["created \(Self.display(path))"] : []
    lines += applied.map { "applied \($0.name) (sha256 \($0.checksum.prefix(12)))" }
    if applied.isEmpty { lines.append("\(Self.display(path)) is up to date") }
    return lines
  }

  /// `check`: one line per verification.
  func check(_ results: [SessionStore.CheckResult]) -> [String] {
    if json {
      return results.map {
        ([
          "type": "check", "name": .string($0.check.rawValue), "passed": .bool($0.verdict == .passed),
          "detail": .string($0.detail),
        ]
          as JSONValue).encoded
      }
    }
    let width = results.map(\.check.rawValue.count).max() ?? 0
    return results.map {
      "\($0.verdict == .passed ? "ok  " : "FAIL")  \(Self.padded($0.check.rawValue, width))  "
        + Self.display($0.detail)
    }
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

  private static func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
  }

  private func table(_ rows: [(String, String)]) -> [String] {
    let width = rows.map(\.0.count).max() ?? 0
    return rows.map { Self.padded($0.0, width) + "  " + $0.1 }
  }
}
