import FeedKit
import SessionStorage

/// Turns results into output lines: short aligned text for people, or one JSON object per
/// line (`--json`). Pure, so tests can check every shape without a process.
struct Presenter: Sendable {
  /// Whether to print JSON Lines.
  let json: Bool

  /// `status`: the state, its cursor and the file; people also get the greeting.
  func status(_ state: SessionState, cursor: Cursor, path: String, greeting: String) -> [String] {
    if json { return [JSONValue.status(state, cursor: cursor).encoded] }
    return table([
      ("greeting", Self.display(greeting)),
      ("username", Self.display(state.username)),
      ("logged in", state.isLoggedIn ? "yes" : "no"),
      ("updated", Timestamp.format(state.updatedAt)),
      ("cursor", cursor.description),
      ("database", Self.display(path)),
    ])
  }

  /// `watch`'s first line.
  func snapshot(_ state: SessionState, cursor: Cursor) -> String {
    if json { return JSONValue.snapshot(state, cursor: cursor).encoded }
    return "snapshot at \(cursor): \(Self.display(state.username)), "
      + "\(state.isLoggedIn ? "logged in" : "logged out"), updated \(Timestamp.format(state.updatedAt))"
  }

  /// One change, its columns padded to at least the given widths (`watch` streams, so it
  /// cannot measure the lines to come).
  func change(_ entry: SessionEntry, cursorWidth: Int = 1, originWidth: Int = 10) -> String {
    if json { return JSONValue.change(entry).encoded }
    let events = entry.events.map(Self.describe).joined(separator: ", ")
    return [
      Self.padded(entry.cursor.description, cursorWidth), Timestamp.format(entry.time),
      Self.padded(Self.display(entry.origin), originWidth), events.isEmpty ? "(no event)" : events,
    ].joined(separator: "  ")
  }

  /// Several changes, aligned with each other (`history`).
  func changes(_ entries: [SessionEntry]) -> [String] {
    let cursorWidth = entries.map(\.cursor.description.count).max() ?? 1
    let originWidth = entries.map { Self.display($0.origin).count }.max() ?? 1
    return entries.map { change($0, cursorWidth: cursorWidth, originWidth: originWidth) }
  }

  /// A write that changed nothing: the reason for people, the state and cursor for programs.
  func noChange(_ reason: String, state: SessionState, cursor: Cursor) -> String {
    if json {
      return (["type": "noChange", "cursor": .int(cursor.rawValue), "state": .state(state)] as JSONValue)
        .encoded
    }
    return "no change: " + reason
  }

  /// `compact`.
  func compaction(_ compaction: SessionStore.Compaction) -> String {
    let bounds = compaction.bounds
    if json {
      let value: JSONValue = [
        "type": "compaction", "removed": .int(Int64(compaction.removed)),
        "oldest": bounds.oldest.map { .int($0.rawValue) } ?? .null, "head": .int(bounds.head.rawValue),
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
  func check(_ items: [SessionStore.CheckItem]) -> [String] {
    if json {
      return items.map {
        ([
          "type": "check", "name": .string($0.name), "passed": .bool($0.passed), "detail": .string($0.detail),
        ]
          as JSONValue).encoded
      }
    }
    let width = items.map(\.name.count).max() ?? 0
    return items.map {
      "\($0.passed ? "ok  " : "FAIL")  \(Self.padded($0.name, width))  \(Self.display($0.detail))"
    }
  }

  /// `--version`.
  func version(_ version: String) -> String {
    json ? (["version": .string(version)] as JSONValue).encoded : "sessionctl \(version)"
  }

  /// An event in a few words: `login alice`, `logout alice`, `rename alice → bob`.
  static func describe(_ event: SessionEvent) -> String {
    switch event {
    case .loggedIn(let username): "login \(display(username))"
    case .loggedOut(let username): "logout \(display(username))"
    case .usernameChanged(let from, let to): "rename \(display(from)) → \(display(to))"
    }
  }

  /// Text safe for a terminal: `(none)` for nil; control characters (C0, DEL, C1), U+2028,
  /// U+2029 and format characters but U+200D (bidirectional controls, zero-width spaces…),
  /// which only an edit in the sqlite3 shell can store in a username, shown as
  /// `\u{1B}`-style escapes.
  static func display(_ text: String?) -> String {
    guard let text else { return "(none)" }
    var output = ""
    for scalar in text.unicodeScalars {
      if scalar.isEscapedInOutput {
        output += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      } else {
        output.unicodeScalars.append(scalar)
      }
    }
    return output
  }

  private static func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
  }

  private func table(_ rows: [(String, String)]) -> [String] {
    let width = rows.map(\.0.count).max() ?? 0
    return rows.map { Self.padded($0.0, width) + "  " + $0.1 }
  }
}
